import NIOCore

/// Server → agent: start recording a new session (protocol.md §6.16). The agent
/// answers with a ``SessionOpen`` carrying a session id of its choosing and these
/// labels (plus any of its own), or with an ``ErrorReport``.
public struct StartSession: Sendable, Hashable {
    public var labels: [Label]

    public init(labels: [Label] = []) { self.labels = labels }
}

/// Server → agent: finish the session; the agent answers with ``SessionClose`` (protocol.md §6.17).
public struct StopSession: Sendable, Hashable {
    public var sessionID: SessionID

    public init(sessionID: SessionID) { self.sessionID = sessionID }
}

/// Server → agent: abandon the session; the agent answers with ``SessionCancel`` (protocol.md §6.18).
public struct CancelSession: Sendable, Hashable {
    public var sessionID: SessionID
    public var reason: String

    public init(sessionID: SessionID, reason: String) {
        self.sessionID = sessionID
        self.reason = reason
    }
}

extension ByteBuffer {
    mutating func readStartSession(limits: ProtocolLimits) throws(ProtocolError) -> StartSession {
        StartSession(labels: try readLabels(limits: limits))
    }

    mutating func writeStartSession(_ command: StartSession, limits: ProtocolLimits) throws(ProtocolError) {
        try writeLabels(command.labels, limits: limits)
    }

    mutating func readStopSession() throws(ProtocolError) -> StopSession {
        StopSession(sessionID: try readIdentifier("StopSession.sessionID"))
    }

    mutating func writeStopSession(_ command: StopSession) {
        writeIdentifier(command.sessionID)
    }

    mutating func readCancelSession(limits: ProtocolLimits) throws(ProtocolError) -> CancelSession {
        CancelSession(
            sessionID: try readIdentifier("CancelSession.sessionID"),
            reason: try readUTF8("CancelSession.reason", max: limits.maxStringBytes))
    }

    mutating func writeCancelSession(_ command: CancelSession, limits: ProtocolLimits) throws(ProtocolError) {
        writeIdentifier(command.sessionID)
        try writeUTF8(command.reason, "CancelSession.reason", max: limits.maxStringBytes)
    }
}

import NIOCore

/// Server → agent: start recording a new session (protocol.md §6.16). The agent
/// answers with a ``SessionOpen`` carrying a session id of its choosing and these
/// labels (plus any of its own), or with an ``ErrorReport``.
public struct StartSession: Sendable, Hashable {
    public var labels: [Label]
    /// When capture starts, on the agent's clock (the one it stamps samples with); nil: at
    /// once. Sent only to an agent with ``Capabilities/scheduledCommands``.
    public var startAt: Int64?

    public init(labels: [Label] = [], startAt: Int64? = nil) {
        self.labels = labels
        self.startAt = startAt
    }
}

/// Server → agent: finish the session; the agent answers with ``SessionClose`` (protocol.md §6.17).
public struct StopSession: Sendable, Hashable {
    public var sessionID: SessionID
    /// When capture stops, on the agent's clock; nil: at once. Sent only to an agent with
    /// ``Capabilities/scheduledCommands``.
    public var stopAt: Int64?

    public init(sessionID: SessionID, stopAt: Int64? = nil) {
        self.sessionID = sessionID
        self.stopAt = stopAt
    }
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
        let labels = try readLabels(limits: limits)
        return StartSession(labels: labels, startAt: try readScheduledInstant("StartSession.startAt"))
    }

    mutating func writeStartSession(_ command: StartSession, limits: ProtocolLimits) throws(ProtocolError) {
        try writeLabels(command.labels, limits: limits)
        if let startAt = command.startAt { writeInteger(startAt) }
    }

    mutating func readStopSession() throws(ProtocolError) -> StopSession {
        let id = try readIdentifier("StopSession.sessionID")
        return StopSession(sessionID: id, stopAt: try readScheduledInstant("StopSession.stopAt"))
    }

    mutating func writeStopSession(_ command: StopSession) {
        writeIdentifier(command.sessionID)
        if let stopAt = command.stopAt { writeInteger(stopAt) }
    }

    /// The optional instant ending a scheduled command (protocol.md §6.16, §6.17): absent, or
    /// an i64 of nanoseconds on the agent's clock, not negative.
    private mutating func readScheduledInstant(_ field: StaticString) throws(ProtocolError) -> Int64? {
        guard readableBytes > 0 else { return nil }
        let instant = try readWire(field, as: Int64.self)
        guard instant >= 0 else { throw .invalid(field, "\(instant) is negative") }
        return instant
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

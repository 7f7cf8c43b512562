import NIOCore

/// Agent → server, after a reconnect and ``Hello``: continue an interrupted session
/// (protocol.md §6.7, §7.3). The server answers ``SessionAccepted`` with the sequence
/// number it has made durable; the agent then resends every sample after it.
public struct SessionResume: Sendable, Hashable {
    public var sessionID: SessionID
    /// The highest sequence number the agent saw acknowledged (0 = none).
    public var lastAcknowledged: UInt64

    public init(sessionID: SessionID, lastAcknowledged: UInt64) {
        self.sessionID = sessionID
        self.lastAcknowledged = lastAcknowledged
    }
}

/// Server → agent: the session is open (after ``SessionOpen``) or resumed (after
/// ``SessionResume``) on this connection (protocol.md §6.8).
public struct SessionAccepted: Sendable, Hashable {
    public var sessionID: SessionID
    /// Highest contiguous sequence number already durable (0 for a new session).
    /// The agent sends (or resends) from `acknowledged + 1`.
    public var acknowledged: UInt64

    public init(sessionID: SessionID, acknowledged: UInt64) {
        self.sessionID = sessionID
        self.acknowledged = acknowledged
    }
}

extension ByteBuffer {
    mutating func readSessionResume() throws(ProtocolError) -> SessionResume {
        SessionResume(
            sessionID: try readIdentifier("SessionResume.sessionID"),
            lastAcknowledged: try readWire("SessionResume.lastAcknowledged"))
    }

    mutating func writeSessionResume(_ message: SessionResume) {
        writeIdentifier(message.sessionID)
        writeInteger(message.lastAcknowledged)
    }

    mutating func readSessionAccepted() throws(ProtocolError) -> SessionAccepted {
        SessionAccepted(
            sessionID: try readIdentifier("SessionAccepted.sessionID"),
            acknowledged: try readWire("SessionAccepted.acknowledged"))
    }

    mutating func writeSessionAccepted(_ message: SessionAccepted) {
        writeIdentifier(message.sessionID)
        writeInteger(message.acknowledged)
    }
}

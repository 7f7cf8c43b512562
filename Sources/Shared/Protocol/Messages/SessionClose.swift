import NIOCore

/// Agent → server: the session is complete; finalize the recording once every
/// sample up to `finalSequence` is durable (protocol.md §6.9).
public struct SessionClose: Sendable, Hashable {
    public var sessionID: SessionID
    /// The last sequence number the agent sent in this session (0 if none).
    public var finalSequence: UInt64

    public init(sessionID: SessionID, finalSequence: UInt64) {
        self.sessionID = sessionID
        self.finalSequence = finalSequence
    }
}

/// Agent → server: discard the session and everything recorded for it (protocol.md §6.10).
public struct SessionCancel: Sendable, Hashable {
    public var sessionID: SessionID
    public var reason: String

    public init(sessionID: SessionID, reason: String) {
        self.sessionID = sessionID
        self.reason = reason
    }
}

/// Server → agent: the session is over and its data settled (protocol.md §6.11).
/// After this the agent may forget everything buffered for the session.
public struct SessionClosed: Sendable, Hashable {
    public enum Outcome: UInt8, Sendable, Hashable {
        /// The recording was finalized; every sample up to `durableSequence` is in it.
        case finalized = 1
        /// The recording was discarded.
        case cancelled = 2
    }

    public var sessionID: SessionID
    public var outcome: Outcome
    public var durableSequence: UInt64

    public init(sessionID: SessionID, outcome: Outcome, durableSequence: UInt64) {
        self.sessionID = sessionID
        self.outcome = outcome
        self.durableSequence = durableSequence
    }
}

extension ByteBuffer {
    mutating func readSessionClose() throws(ProtocolError) -> SessionClose {
        SessionClose(sessionID: try readIdentifier("SessionClose.sessionID"), finalSequence: try readWire("SessionClose.finalSequence"))
    }

    mutating func writeSessionClose(_ message: SessionClose) {
        writeIdentifier(message.sessionID)
        writeInteger(message.finalSequence)
    }

    mutating func readSessionCancel(limits: ProtocolLimits) throws(ProtocolError) -> SessionCancel {
        SessionCancel(
            sessionID: try readIdentifier("SessionCancel.sessionID"),
            reason: try readUTF8("SessionCancel.reason", max: limits.maxStringBytes))
    }

    mutating func writeSessionCancel(_ message: SessionCancel, limits: ProtocolLimits) throws(ProtocolError) {
        writeIdentifier(message.sessionID)
        try writeUTF8(message.reason, "SessionCancel.reason", max: limits.maxStringBytes)
    }

    mutating func readSessionClosed() throws(ProtocolError) -> SessionClosed {
        let sessionID = try readIdentifier("SessionClosed.sessionID")
        let raw = try readWire("SessionClosed.outcome", as: UInt8.self)
        guard let outcome = SessionClosed.Outcome(rawValue: raw) else {
            throw .invalid("SessionClosed.outcome", "\(raw) is not 1 (finalized) or 2 (cancelled)")
        }
        return SessionClosed(sessionID: sessionID, outcome: outcome, durableSequence: try readWire("SessionClosed.durableSequence"))
    }

    mutating func writeSessionClosed(_ message: SessionClosed) {
        writeIdentifier(message.sessionID)
        writeInteger(message.outcome.rawValue)
        writeInteger(message.durableSequence)
    }
}

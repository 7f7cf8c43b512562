import NIOCore

/// Server → agent: every sample with a sequence number ≤ `sequence` is durable
/// (protocol.md §6.13). Acks never go backwards; the agent may drop those samples — unless
/// the `remoteAcks` capability is negotiated: then it keeps them until a `RemoteAck` (the
/// same layout, message type 0x24, §6.13a) says they are durable beyond the server's host.
public struct Ack: Sendable, Hashable {
    public var sessionID: SessionID
    /// The highest contiguous durable sequence number.
    public var sequence: UInt64

    public init(sessionID: SessionID, sequence: UInt64) {
        self.sessionID = sessionID
        self.sequence = sequence
    }
}

extension ByteBuffer {
    mutating func readAck() throws(ProtocolError) -> Ack {
        Ack(sessionID: try readIdentifier("Ack.sessionID"), sequence: try readWire("Ack.sequence"))
    }

    /// `RemoteAck` shares `Ack`'s layout (protocol.md §6.13a); its own field names in errors.
    mutating func readRemoteAck() throws(ProtocolError) -> Ack {
        Ack(sessionID: try readIdentifier("RemoteAck.sessionID"), sequence: try readWire("RemoteAck.sequence"))
    }

    mutating func writeAck(_ ack: Ack) {
        writeIdentifier(ack.sessionID)
        writeInteger(ack.sequence)
    }
}

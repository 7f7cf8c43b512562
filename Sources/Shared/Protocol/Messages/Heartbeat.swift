import NIOCore

/// Either direction, any time after the handshake (protocol.md §6.3). The receiver
/// answers at once with a ``HeartbeatReply`` echoing `nonce` and `originTime`.
/// Timestamps are nanoseconds of the sender's monotonic clock.
public struct Heartbeat: Sendable, Hashable {
    public var nonce: UInt64
    /// t1: when the sender sent it.
    public var originTime: Int64

    public init(nonce: UInt64, originTime: Int64) {
        self.nonce = nonce
        self.originTime = originTime
    }
}

/// The answer to a ``Heartbeat`` (protocol.md §6.4), NTP-style: with t4 the arrival
/// time of the reply on the original sender's clock,
/// round trip = (t4 − t1) − (t3 − t2) and offset of the replier's clock = ((t2 − t1) + (t3 − t4)) / 2.
public struct HeartbeatReply: Sendable, Hashable {
    public var nonce: UInt64
    /// t1, copied from the heartbeat.
    public var originTime: Int64
    /// t2: when the heartbeat arrived, on the replier's clock.
    public var receiveTime: Int64
    /// t3: when the reply was sent, on the replier's clock.
    public var transmitTime: Int64

    public init(nonce: UInt64, originTime: Int64, receiveTime: Int64, transmitTime: Int64) {
        self.nonce = nonce
        self.originTime = originTime
        self.receiveTime = receiveTime
        self.transmitTime = transmitTime
    }

    /// The reply to `heartbeat`, received at `receiveTime` and sent at `transmitTime`.
    public init(answering heartbeat: Heartbeat, receiveTime: Int64, transmitTime: Int64) {
        self.init(nonce: heartbeat.nonce, originTime: heartbeat.originTime, receiveTime: receiveTime, transmitTime: transmitTime)
    }

    /// Network round-trip time in nanoseconds, excluding the replier's processing time.
    public func roundTripTime(arrivalTime t4: Int64) -> Int64 {
        (t4 &- originTime) &- (transmitTime &- receiveTime)
    }

    /// How far the replier's clock is ahead of the original sender's, in nanoseconds.
    public func clockOffset(arrivalTime t4: Int64) -> Int64 {
        // Halve each difference first so that the sum cannot overflow.
        (receiveTime &- originTime) / 2 &+ (transmitTime &- t4) / 2
    }
}

extension ByteBuffer {
    mutating func readHeartbeat() throws(ProtocolError) -> Heartbeat {
        Heartbeat(nonce: try readWire("Heartbeat.nonce"), originTime: try readWire("Heartbeat.originTime"))
    }

    mutating func writeHeartbeat(_ heartbeat: Heartbeat) {
        writeInteger(heartbeat.nonce)
        writeInteger(heartbeat.originTime)
    }

    mutating func readHeartbeatReply() throws(ProtocolError) -> HeartbeatReply {
        HeartbeatReply(
            nonce: try readWire("HeartbeatReply.nonce"), originTime: try readWire("HeartbeatReply.originTime"),
            receiveTime: try readWire("HeartbeatReply.receiveTime"), transmitTime: try readWire("HeartbeatReply.transmitTime"))
    }

    mutating func writeHeartbeatReply(_ reply: HeartbeatReply) {
        writeInteger(reply.nonce)
        writeInteger(reply.originTime)
        writeInteger(reply.receiveTime)
        writeInteger(reply.transmitTime)
    }
}

/// A recording's input sequence numbers may come from several independent senders: a session
/// across agents numbers each agent's samples on its own. The top 16 bits of a sequence name
/// its sender's lane, the low 48 bits the sender's own number. Each lane has its own ack point,
/// and its own rule that sequences only grow. A recording from one sender uses lane 0, where a
/// sequence is the sender's number unchanged (and its files are byte for byte what they were
/// before lanes existed).
public enum SequenceLane {
    public static let bits = 48
    /// The largest number a sender may use within its lane (2^48 − 1: 8900 years of 1000
    /// samples a second).
    public static let maxLocalSequence: UInt64 = (1 << 48) - 1
    /// Lanes a recording may use: 0 and one per further sender.
    public static let maxLane: UInt16 = .max

    public static func lane(of sequence: UInt64) -> UInt16 { UInt16(truncatingIfNeeded: sequence >> UInt64(bits)) }

    /// The sender's own number within its lane.
    public static func local(_ sequence: UInt64) -> UInt64 { sequence & maxLocalSequence }

    /// The recording's sequence for `local` of lane `lane`; nil when `local` does not fit in 48 bits.
    public static func compose(lane: UInt16, local: UInt64) -> UInt64? {
        guard local <= maxLocalSequence else { return nil }
        return UInt64(lane) << UInt64(bits) | local
    }
}

/// Each lane's ack point: every sequence of the lane at or below it is durable. Points are
/// whole sequences (lane bits included); a lane with nothing durable is absent and reads 0.
public struct DurablePoints: Sendable, Equatable {
    public private(set) var byLane: [UInt16: UInt64] = [:]

    public init() {}

    /// Lane 0's point is `lane0` (when not 0); the others come from `others`.
    public init(lane0: UInt64, others: [UInt16: UInt64] = [:]) {
        for (lane, point) in others where lane != 0 { raise(to: point, lane: lane) }
        if lane0 > 0 { raise(to: lane0, lane: 0) }
    }

    public subscript(lane: UInt16) -> UInt64 { byLane[lane] ?? 0 }

    /// Lane 0's point: what a recording from one sender acknowledges.
    public var lane0: UInt64 { self[0] }

    /// The lanes other than 0 that have a point.
    public var otherLanes: [(lane: UInt16, point: UInt64)] {
        byLane.filter { $0.key != 0 }.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// Moves `lane`'s point up to `point` (never down). A point whose lane bits differ from
    /// `lane` is ignored: it is damage, not a point of this lane.
    public mutating func raise(to point: UInt64, lane: UInt16) {
        guard point > 0, SequenceLane.lane(of: point) == lane, point > self[lane] else { return }
        byLane[lane] = point
    }

    /// Every lane at the larger of the two points.
    public mutating func formMaximum(_ other: DurablePoints) {
        for (lane, point) in other.byLane { raise(to: point, lane: lane) }
    }

    /// Whether `sequence` is above its lane's point.
    public func isAbove(_ sequence: UInt64) -> Bool { sequence > self[SequenceLane.lane(of: sequence)] }
}

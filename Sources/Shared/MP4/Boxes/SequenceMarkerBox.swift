/// Written as a `free` box (§8.1.2, ignored by every reader) right before each fragment's
/// `moof`, in the same write: which input sequence numbers the fragment holds and the ack
/// point once it is durable. After a server crash this is how a resumed recording knows which
/// resent samples it already has — atomically with the samples themselves.
/// Payload: 'mcsq', durable-through u64, range count u32, then (first u64, count u32) ranges.
/// A recording from several senders (``SequenceLane``) appends the other lanes' ack points:
/// lane count u32, then (lane u16, durable-through u64) entries; the first field stays lane
/// 0's. A one-sender recording writes no such tail, so its markers are what they always were.
public struct SequenceMarkerBox: MP4Box, Equatable {
    public static let magic: FourCC = "mcsq"
    public static let maxRanges = 1 << 20
    public var type: FourCC { FreeSpaceBox.boxType }
    public var durable: DurablePoints
    public var ranges: [ClosedRange<UInt64>]

    /// Lane 0's ack point.
    public var durableThrough: UInt64 { durable.lane0 }

    public init(durableThrough: UInt64, sequences: [UInt64]) {
        self.init(durable: DurablePoints(lane0: durableThrough), sequences: sequences)
    }

    public init(durable: DurablePoints, sequences: [UInt64]) {
        self.durable = durable
        var ranges: [ClosedRange<UInt64>] = []
        for s in sequences.sorted() {
            if let last = ranges.last, last.upperBound < s, last.upperBound + 1 == s { ranges[ranges.count - 1] = last.lowerBound...s } else if ranges.last?.contains(s) != true {
                ranges.append(s...s)
            }
        }
        self.ranges = ranges
    }

    public var sequences: [UInt64] { ranges.flatMap { Array($0) } }

    public var payloadSize: Int {
        let lanes = durable.otherLanes.count
        return 4 + 8 + 4 + 12 * ranges.count + (lanes > 0 ? 4 + 10 * lanes : 0)
    }

    public func encodePayload(into w: inout ByteWriter) {
        w.fourCC(Self.magic)
        w.u64(durable.lane0)
        w.u32(UInt32(ranges.count))
        for r in ranges {
            w.u64(r.lowerBound)
            w.u32(UInt32(clamping: r.count))
        }
        let lanes = durable.otherLanes
        guard !lanes.isEmpty else { return }
        w.u32(UInt32(lanes.count))
        for (lane, point) in lanes {
            w.u16(lane)
            w.u64(point)
        }
    }

    /// nil when the `free` box is not one of ours.
    public init?(freePayload r: inout ByteReader) throws(MP4ParseError) {
        guard r.remaining >= 16, try r.fourCC() == Self.magic else { return nil }
        let lane0 = try r.u64("durable_through")
        let n = try r.readCount("sequence ranges", entrySize: 12)
        ranges = []
        for _ in 0..<n {
            let first = try r.u64("range_first")
            let count = UInt64(try r.u32("range_count"))
            guard count > 0, first <= UInt64.max - (count - 1) else { throw .invalid("empty or overflowing sequence range") }
            ranges.append(first...first + (count - 1))  // (first + count) alone can overflow: found by fuzzing
        }
        var others: [UInt16: UInt64] = [:]
        if r.remaining > 0 {
            let lanes = try r.readCount("lane points", entrySize: 10)
            for _ in 0..<lanes {
                let lane = try r.u16("lane")
                // A point outside its own lane is damage: DurablePoints ignores it.
                others[lane] = max(others[lane] ?? 0, try r.u64("lane_durable_through"))
            }
        }
        durable = DurablePoints(lane0: SequenceLane.lane(of: lane0) == 0 ? lane0 : 0, others: others)
    }
}

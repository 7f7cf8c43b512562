import DequeModule

/// Validates one incoming sample against its track and converts it to MP4 form. Pure: a
/// rejected sample changes nothing.
struct SamplePreparation {
    static func prepare(_ sample: MuxerSample, trackIndex: Int, track: PreparedTrack, maxSampleSize: Int) throws(MuxerError) -> PreparedSample {
        guard !sample.data.isEmpty else { throw MuxerError(.emptySample, "track \(track.id) sequence \(sample.sequence): empty sample") }
        guard sample.data.count <= maxSampleSize else {
            throw MuxerError(.sampleTooLarge, "track \(track.id) sequence \(sample.sequence): \(sample.data.count) bytes exceeds the \(maxSampleSize)-byte limit")
        }
        guard sample.pts >= sample.dts else {
            throw MuxerError(.presentationBeforeDecode, "track \(track.id) sequence \(sample.sequence): PTS \(sample.pts) before DTS \(sample.dts)")
        }
        guard sample.duration >= 0 else { throw MuxerError(.malformedSample, "negative duration") }
        let (payload, isSync) = try track.codec.prepare(sample, track: track.id)
        return PreparedSample(trackIndex: trackIndex, sequence: sample.sequence, pts: sample.pts, dts: sample.dts,
                              duration: sample.duration, isSync: isSync, payload: payload)
    }
}

/// Which appended sequences are durable; yields, for each lane (``SequenceLane``), the highest
/// sequence at or below which everything of that lane is.
struct SequenceLedger {
    private struct Lane {
        /// Appended and not yet settled, in order: the front is the next ack point candidate.
        var outstanding = Deque<UInt64>()
        var lastAppended: UInt64?
    }

    private var lanes: [UInt16: Lane] = [:]
    private var durable: Set<UInt64> = []
    private(set) var points = DurablePoints()
    /// Sequences above their lane's ack point that a reopened file already holds.
    private var heldAboveAckPoint: Set<UInt64> = []

    /// Lane 0's ack point (a recording from one sender).
    var durableThrough: UInt64 { points.lane0 }

    init() {}

    init(resumingAt points: DurablePoints, alreadyHeld: Set<UInt64>) {
        self.points = points
        for (lane, point) in points.byLane { lanes[lane] = Lane(lastAppended: point) }
        heldAboveAckPoint = alreadyHeld.filter(points.isAbove)
    }

    /// Already appended (or, after a resume, already in the file).
    func isDuplicate(_ sequence: UInt64) -> Bool {
        if let last = lanes[SequenceLane.lane(of: sequence)]?.lastAppended, sequence <= last { return true }
        return heldAboveAckPoint.contains(sequence)
    }

    mutating func appended(_ sequence: UInt64) {
        let lane = SequenceLane.lane(of: sequence)
        lanes[lane, default: Lane()].outstanding.append(sequence)
        lanes[lane]?.lastAppended = sequence
    }

    /// A rejected or dropped sample no longer blocks the ack point.
    mutating func settled(_ sequences: [UInt64]) {
        durable.formUnion(sequences)
        for lane in Set(sequences.map(SequenceLane.lane(of:))) {
            while let next = lanes[lane]?.outstanding.first, durable.remove(next) != nil {
                points.raise(to: next, lane: lane)
                lanes[lane]?.outstanding.removeFirst()
            }
        }
    }
}

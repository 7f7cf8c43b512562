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

/// Which appended sequences are durable; yields the highest sequence below which everything is.
struct SequenceLedger {
    /// Appended and not yet settled, in order: the front is the next ack point candidate.
    private var outstanding = Deque<UInt64>()
    private var durable: Set<UInt64> = []
    private(set) var durableThrough: UInt64 = 0
    private(set) var lastAppended: UInt64?

    /// Sequences above the ack point that a reopened file already holds.
    private var heldAboveAckPoint: Set<UInt64> = []

    init() {}

    init(resumingAt durableThrough: UInt64, alreadyHeld: Set<UInt64>) {
        self.durableThrough = durableThrough
        lastAppended = durableThrough
        heldAboveAckPoint = alreadyHeld.filter { $0 > durableThrough }
    }

    /// Already appended (or, after a resume, already in the file).
    func isDuplicate(_ sequence: UInt64) -> Bool {
        if let last = lastAppended, sequence <= last { return true }
        return heldAboveAckPoint.contains(sequence)
    }

    mutating func appended(_ sequence: UInt64) {
        outstanding.append(sequence)
        lastAppended = sequence
    }

    /// A rejected or dropped sample no longer blocks the ack point.
    mutating func settled(_ sequences: [UInt64]) {
        durable.formUnion(sequences)
        while let next = outstanding.first, durable.remove(next) != nil {
            durableThrough = next
            outstanding.removeFirst()
        }
    }
}

/// A track's sample table as it grows fragment by fragment: exactly what `stbl` needs at
/// finalize time, built the same way from live samples and from a crashed file's fragments.
public struct TrackTable: Sendable, Equatable {
    /// Decode time of each sample in media ticks, counted from the file's decode origin.
    public internal(set) var decodeTimes: [Int64] = []
    public internal(set) var compositionOffsets: [Int32] = []
    public internal(set) var sizes: [UInt32] = []
    public internal(set) var syncSampleNumbers: [UInt32] = []
    public internal(set) var chunkOffsets: [UInt64] = []
    public internal(set) var samplesPerChunk: [UInt32] = []
    /// Duration of the last sample (the one no later decode time bounds).
    public internal(set) var lastSampleDuration: UInt32 = 0
    public internal(set) var payloadBytes: UInt64 = 0

    public init() {}

    public var sampleCount: Int { sizes.count }
    var hasCompositionOffsets: Bool { compositionOffsets.contains { $0 != 0 } }
    var allSync: Bool { syncSampleNumbers.count == sizes.count }

    /// Appends one chunk (a track's run in one fragment).
    mutating func appendChunk(offset: UInt64, decodeTimes dts: [Int64], compositionOffsets cts: [Int32],
                              sizes chunkSizes: [UInt32], sync: [Bool], lastDuration: UInt32) {
        guard !chunkSizes.isEmpty else { return }
        chunkOffsets.append(offset)
        samplesPerChunk.append(UInt32(chunkSizes.count))
        let base = UInt32(sizes.count)
        for (i, isSync) in sync.enumerated() where isSync { syncSampleNumbers.append(base + UInt32(i) + 1) }
        decodeTimes += dts
        compositionOffsets += cts
        sizes += chunkSizes
        payloadBytes += chunkSizes.reduce(0) { $0 + UInt64($1) }
        lastSampleDuration = lastDuration
    }

    /// Per-sample durations from consecutive decode times; exact even when a fragment had to
    /// guess its last sample's duration.
    public var durations: [UInt32] {
        guard !decodeTimes.isEmpty else { return [] }
        var out = [UInt32](repeating: 0, count: decodeTimes.count)
        for i in 0..<decodeTimes.count - 1 {
            out[i] = UInt32(clamping: TimeScaling.difference(decodeTimes[i + 1], decodeTimes[i]))
        }
        out[decodeTimes.count - 1] = lastSampleDuration
        return out
    }

    /// Decode time just after the last sample.
    public var endDecodeTime: Int64 { TimeScaling.sum(decodeTimes.last ?? 0, Int64(lastSampleDuration)) }

    /// Earliest presentation time in media ticks from the decode origin.
    public var earliestPresentationTime: Int64? {
        guard !decodeTimes.isEmpty else { return nil }
        // With B-frames the earliest PTS is among the first few samples in decode order.
        var best = Int64.max
        for i in 0..<min(decodeTimes.count, 64) { best = min(best, TimeScaling.sum(decodeTimes[i], Int64(compositionOffsets[i]))) }
        return best
    }

    /// Presentation end: last PTS plus its duration, over the tail where reordering can happen.
    public var presentationEndTime: Int64 {
        guard !decodeTimes.isEmpty else { return 0 }
        let durations = self.durations
        var best = Int64.min
        for i in max(0, decodeTimes.count - 64)..<decodeTimes.count {
            best = max(best, TimeScaling.sum(TimeScaling.sum(decodeTimes[i], Int64(compositionOffsets[i])), Int64(durations[i])))
        }
        return best
    }
}

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
        let payload: [UInt8]
        var isSync = sample.isKeyframe
        if track.isVideo {
            (payload, isSync) = try videoPayload(sample, track: track)
        } else {
            payload = sample.data
            isSync = true // every Opus packet is a sync sample
        }
        return PreparedSample(trackIndex: trackIndex, sequence: sample.sequence, pts: sample.pts, dts: sample.dts,
                              duration: sample.duration, isSync: isSync, payload: payload)
    }

    /// Annex B or length-prefixed in; 4-byte length-prefixed out, with SPS/PPS/AUD removed
    /// (parameter sets live in `avcC`; one that differs from it is a configuration change,
    /// which a single `avc1` entry cannot describe).
    static func videoPayload(_ sample: MuxerSample, track: PreparedTrack) throws(MuxerError) -> ([UInt8], Bool) {
        let data = sample.data
        let ranges: [Range<Int>]
        do { ranges = try H264NALUnits.nalUnitRanges(in: data) } catch {
            throw MuxerError(.malformedSample, "track \(track.id) sequence \(sample.sequence): \(error)")
        }
        var out: [UInt8] = []
        out.reserveCapacity(data.count + 4 * ranges.count)
        var hasIDR = false
        var sliceCount = 0
        for r in ranges {
            let type = data[r.lowerBound] & 0x1F
            switch type {
            case H264NALUnits.typeSPS, H264NALUnits.typePPS:
                let expected = type == H264NALUnits.typeSPS ? track.sps : track.pps
                guard let expected, data[r].elementsEqual(expected) else {
                    throw MuxerError(.codecConfigurationChanged, "track \(track.id) sequence \(sample.sequence): in-band \(type == 7 ? "SPS" : "PPS") differs from the track's configuration")
                }
                continue
            case H264NALUnits.typeAUD:
                continue
            case H264NALUnits.typeIDR:
                hasIDR = true
                sliceCount += 1
            case 1:
                sliceCount += 1
            default:
                break
            }
            let n = UInt32(r.count)
            out.append(UInt8(n >> 24)); out.append(UInt8(truncatingIfNeeded: n >> 16))
            out.append(UInt8(truncatingIfNeeded: n >> 8)); out.append(UInt8(truncatingIfNeeded: n))
            out.append(contentsOf: data[r])
        }
        guard sliceCount > 0 else {
            throw MuxerError(.malformedSample, "track \(track.id) sequence \(sample.sequence): no picture slice in the access unit")
        }
        // The bitstream is the authority on sync samples; a keyframe flag on a non-IDR is kept
        // only if the caller says so (open-GOP recovery points), never dropped.
        return (out, sample.isKeyframe || hasIDR)
    }
}

/// Which appended sequences are durable; yields the highest sequence below which everything is.
struct SequenceLedger {
    private var outstanding: [UInt64] = []
    private var head = 0
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
        while head < outstanding.count, durable.remove(outstanding[head]) != nil {
            durableThrough = outstanding[head]
            head += 1
        }
        if head > 1024, head * 2 > outstanding.count {
            outstanding.removeFirst(head)
            head = 0
        }
    }
}

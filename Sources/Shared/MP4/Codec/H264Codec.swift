/// H.264 in MP4 (ISO/IEC 14496-15 §5): an `avc1` entry carrying `avcC` built from one SPS and
/// one PPS, samples as 4-byte length-prefixed access units without parameter sets or access
/// unit delimiters, IDR pictures (or samples flagged as keyframes) as sync samples listed in
/// `stss`. No priming and no roll group: a decoder starts at any sync sample.
struct H264Codec: TrackCodec {
    static let name = CodecName.h264
    static let kind = MediaKind.video
    static let sampleEntryType = AVCSampleEntry.boxType
    /// 90 kHz, the MPEG clock: every common frame rate is a whole number of ticks.
    static let timescale: UInt32 = 90000
    static let syncSamples = SyncSampleRule.marked
    static let nominalSampleTicks: Int64 = 3000

    /// Raw SPS and PPS NAL units (no start code, no length prefix).
    let sps: [UInt8]
    let pps: [UInt8]
    let sampleEntry: SampleEntry
    let width: Int
    let height: Int
    var primingTicks: Int { 0 }

    init(sps: [UInt8], pps: [UInt8], track id: UInt32) throws(MuxerError) {
        let info: H264SequenceParameterSet
        do { info = try H264SequenceParameterSet(nalUnit: sps) } catch {
            throw MuxerError(.invalidConfiguration, "track \(id): cannot parse SPS: \(error)")
        }
        guard pps.first.map({ $0 & 0x1F }) == H264NALUnits.typePPS, sps.count <= 0xFFFF, pps.count <= 0xFFFF else {
            throw MuxerError(.invalidConfiguration, "track \(id): PPS is not a PPS NAL unit")
        }
        self.sps = sps
        self.pps = pps
        width = info.width
        height = info.height
        let avcC = AVCConfigurationBox(sps: sps, pps: pps, info: info)
        sampleEntry = .avc(AVCSampleEntry(width: info.width, height: info.height, configuration: avcC))
    }

    static func configuration(from entry: SampleEntry) throws(MuxerError) -> TrackConfiguration.Codec? {
        guard case let .avc(avc1) = entry else { return nil }
        guard let sps = avc1.configuration.sequenceParameterSets.first, let pps = avc1.configuration.pictureParameterSets.first else {
            throw MuxerError(.notOurFile, "avcC without parameter sets")
        }
        return .h264(sps: sps, pps: pps)
    }

    /// Annex B or length-prefixed in; 4-byte length-prefixed out, with SPS/PPS/AUD removed
    /// (parameter sets live in `avcC`; one that differs from it is a configuration change,
    /// which a single `avc1` entry cannot describe).
    func prepare(_ sample: MuxerSample, track id: UInt32) throws(MuxerError) -> (payload: [UInt8], isSync: Bool) {
        let data = sample.data
        let ranges: [Range<Int>]
        do { ranges = try H264NALUnits.nalUnitRanges(in: data) } catch {
            throw MuxerError(.malformedSample, "track \(id) sequence \(sample.sequence): \(error)")
        }
        var kept: [Range<Int>] = []
        kept.reserveCapacity(ranges.count)
        var hasIDR = false
        var sliceCount = 0
        for r in ranges {
            let type = data[r.lowerBound] & 0x1F
            switch type {
            case H264NALUnits.typeSPS, H264NALUnits.typePPS:
                let expected = type == H264NALUnits.typeSPS ? sps : pps
                guard data[r].elementsEqual(expected) else {
                    throw MuxerError(.codecConfigurationChanged, "track \(id) sequence \(sample.sequence): in-band \(type == 7 ? "SPS" : "PPS") differs from the track's configuration")
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
            kept.append(r)
        }
        guard sliceCount > 0 else {
            throw MuxerError(.malformedSample, "track \(id) sequence \(sample.sequence): no picture slice in the access unit")
        }
        // The bitstream is the authority on sync samples; a keyframe flag on a non-IDR is kept
        // only if the caller says so (open-GOP recovery points), never dropped.
        return (Self.lengthPrefixed(kept, of: data), sample.isKeyframe || hasIDR)
    }

    /// The NAL units `kept` of `data`, each behind its 4-byte big-endian length. When that is
    /// `data` itself — the wire protocol's form, no unit dropped — `data` is returned as it
    /// is, which saves a copy of every video byte the server records.
    static func lengthPrefixed(_ kept: [Range<Int>], of data: [UInt8]) -> [UInt8] {
        if isLengthPrefixed(kept, of: data) { return data }
        var out: [UInt8] = []
        out.reserveCapacity(data.count + 4 * kept.count)
        for r in kept {
            for i in 0..<4 { out.append(lengthByte(i, of: r.count)) }
            out.append(contentsOf: data[r])
        }
        return out
    }

    /// Whether `data` is exactly the units `kept`, back to back, each behind the 4-byte length
    /// ``lengthPrefixed(_:of:)`` would write.
    private static func isLengthPrefixed(_ kept: [Range<Int>], of data: [UInt8]) -> Bool {
        var end = 0
        for r in kept {
            guard r.lowerBound == end + 4 else { return false }
            for i in 0..<4 where data[end + i] != lengthByte(i, of: r.count) { return false }
            end = r.upperBound
        }
        return end == data.count
    }

    /// Byte `index` (0 first) of the big-endian 4-byte length `count`.
    private static func lengthByte(_ index: Int, of count: Int) -> UInt8 {
        UInt8(truncatingIfNeeded: UInt32(count) >> (8 * (3 - index)))
    }

    func rollGroup(for table: TrackTable) -> (description: RollGroupDescriptionBox, mapping: SampleToGroupBox)? { nil }
}

import TestSupport
import Shared
@testable import MP4
import Testing

/// SPS parsing (ITU-T H.264 §7.3.2.1.1), NAL framing (Annex B, ISO/IEC 14496-15 §5.3.2),
/// emulation prevention (§7.4.1) and OpusHead (RFC 7845 §5.1).
@Suite("H.264 SPS")
struct H264SequenceParameterSetTests {
    @Test("x264 High 1280x720")
    func high720p() throws {
        let sps = try H264SequenceParameterSet(nalUnit: X264.sps720p)
        #expect(sps.profileIDC == 100)
        #expect(sps.constraintFlags == 0)
        #expect(sps.levelIDC == 31)
        #expect(sps.chromaFormatIDC == 1)
        #expect(sps.bitDepthLumaMinus8 == 0)
        #expect(sps.bitDepthChromaMinus8 == 0)
        #expect(sps.width == 1280)
        #expect(sps.height == 720)
    }

    @Test("x264 High 1920x1080: 1088 coded lines cropped to 1080")
    func high1080p() throws {
        let sps = try H264SequenceParameterSet(nalUnit: X264.sps1080p)
        #expect(sps.profileIDC == 100)
        #expect(sps.levelIDC == 40)
        #expect(sps.width == 1920)
        #expect(sps.height == 1080)
    }

    @Test("x264 Constrained Baseline 320x240: no chroma fields, defaults apply")
    func baseline240p() throws {
        let sps = try H264SequenceParameterSet(nalUnit: X264.sps240p)
        #expect(sps.profileIDC == 66)
        #expect(sps.constraintFlags == 0xC0)
        #expect(sps.levelIDC == 13)
        #expect(sps.chromaFormatIDC == 1)
        #expect(sps.width == 320)
        #expect(sps.height == 240)
    }

    @Test("x264 interlaced 1080i: field coding doubles map units and crop units")
    func interlaced1080() throws {
        let sps = try H264SequenceParameterSet(nalUnit: X264.sps1080i)
        #expect(sps.width == 1920)
        #expect(sps.height == 1080)
    }

    @Test("x264 High 4:4:4 Predictive 640x480 reads separate_colour_plane_flag")
    func high444() throws {
        let sps = try H264SequenceParameterSet(nalUnit: X264.sps444)
        #expect(sps.profileIDC == 244)
        #expect(sps.chromaFormatIDC == 3)
        #expect(sps.width == 640)
        #expect(sps.height == 480)
    }

    @Test("scaling lists are skipped exactly (hand-assembled 176x144 SPS)")
    func scalingLists() throws {
        let sps = try H264SequenceParameterSet(nalUnit: X264.spsScalingLists)
        #expect(sps.profileIDC == 100)
        #expect(sps.width == 176)
        #expect(sps.height == 144)
    }

    @Test("emulation-prevention bytes inside parsed fields are removed (poc_type 1, 640x480)")
    func emulationPreventionInFields() throws {
        // Hand-assembled Baseline SPS. RBSP bits: 1 sps_id=0 | 1 log2_max_frame_num-4=0 | 010 poc_type=1 |
        // 0 delta_pic_order_always_zero | offset_for_non_ref_pic = se(-2^30): 31 zeros, then 32 bits |
        // 1 offset_for_top_to_bottom_field=0 | 010 cycle=1 | 010 offset_for_ref_frame[0]=+1 |
        // 010 refs=1 | 0 gaps | 00000101000 width_mbs-1=39 | 000011110 height-1=29 | 1 1 0 0 | 1 stop.
        // RBSP D0 00 00 00 04 00 00 00 0D ... needs two emulation-prevention bytes:
        let nal: [UInt8] = [
            0x67, 0x42, 0xC0, 0x1E,  // SPS, Baseline, constraint_set0/1, level 3.0
            0xD0, 0x00, 0x00,
            0x03,                    // emulation_prevention_three_byte
            0x00, 0x04, 0x00, 0x00,
            0x03,                    // emulation_prevention_three_byte
            0x00, 0x0D, 0x24, 0x05, 0x01, 0xEC, 0x80,
        ]
        let sps = try H264SequenceParameterSet(nalUnit: nal)
        #expect(sps.width == 640)
        #expect(sps.height == 480)
    }

    @Test("not an SPS, or too short")
    func notAnSPS() {
        expectParseError(.invalid("not an SPS NAL unit")) { _ = try H264SequenceParameterSet(nalUnit: X264.pps720p) }
        expectParseError(.invalid("not an SPS NAL unit")) { _ = try H264SequenceParameterSet(nalUnit: [0x67, 0x64, 0x00]) }
        expectParseError(.invalid("not an SPS NAL unit")) { _ = try H264SequenceParameterSet(nalUnit: []) }
    }

    @Test("an SPS cut inside its fields is truncated")
    func truncatedSPS() {
        // Keep 3 RBSP bytes of the 720p SPS: the width's Exp-Golomb code runs off the end.
        expectParseError(.truncated(field: "SPS bits", needed: 1, available: 0)) {
            _ = try H264SequenceParameterSet(nalUnit: Array(X264.sps720p.prefix(7)))
        }
    }

    @Test("an Exp-Golomb prefix of 32 zero bits is refused")
    func overlongExpGolomb() {
        expectParseError(.invalid("Exp-Golomb code longer than 32 bits")) {
            _ = try H264SequenceParameterSet(nalUnit: [0x67, 0x42, 0x00, 0x1E, 0x80, 0x00, 0x00, 0x03, 0x00, 0x00, 0x01, 0xFF])
        }
    }

    @Test("chroma_format_idc outside 0...3 is refused")
    func chromaFormatOutOfRange() {
        // High profile, 320x240, chroma_format_idc = ue(4) = 00101.
        let nal: [UInt8] = [0x67, 0x64, 0x00, 0x1E, 0x97, 0x2D, 0x02, 0x83, 0xF2]
        #expect(throws: MP4ParseError.self) { _ = try H264SequenceParameterSet(nalUnit: nal) }
    }

    @Test("bit depth outside 8...14 is refused instead of trapping later")
    func bitDepthOutOfRange() async {
        // High profile, 320x240, bit_depth_luma_minus8 = ue(300).
        await #expect(processExitsWith: .success) {
            let nal: [UInt8] = [0x67, 0x64, 0x00, 0x1E, 0xA0, 0x09, 0x6C, 0xB4, 0x0A, 0x0F, 0xC8]
            let pps: [UInt8] = [0x68, 0xCE, 0x38, 0x80]
            _ = try? PreparedTrack(TrackConfiguration(id: 1, label: "x", codec: .h264(sps: nal, pps: pps)))
        }
    }

    @Test("mutated real SPSs never crash the parser and yield only plausible sizes")
    func fuzzSPS() {
        var rng = SplitMix64(seed: 0x5350_5321)
        let corpus = [X264.sps720p, X264.sps1080p, X264.sps240p, X264.sps1080i, X264.sps444, X264.spsScalingLists]
        var parsed = 0
        var failed = 0
        for i in 0..<20_000 {
            var bytes = corpus[i % corpus.count]
            for _ in 0...Int.random(in: 0...2, using: &rng) {
                let at = Int.random(in: 4..<bytes.count, using: &rng)
                bytes[at] ^= UInt8(1) << UInt8.random(in: 0...7, using: &rng)
            }
            if Bool.random(using: &rng) { bytes.removeLast(Int.random(in: 0..<(bytes.count - 4), using: &rng)) }
            do {
                let sps = try H264SequenceParameterSet(nalUnit: bytes)
                #expect((1...16384).contains(sps.width) && (1...16384).contains(sps.height), "\(hex(bytes))")
                parsed += 1
            } catch {
                failed += 1
            }
        }
        #expect(parsed + failed == 20_000)
        #expect(parsed > 1_000)
        #expect(failed > 1_000)
    }
}

@Suite("H.264 NAL unit framing")
struct H264NALUnitsTests {
    @Test("Annex B with 4- and 3-byte start codes")
    func annexBMixedStartCodes() throws {
        let data: [UInt8] = [
            0x00, 0x00, 0x00, 0x01,  // 4-byte start code
            0x09, 0xF0,              // [4..<6] AUD, primary_pic_type 7
            0x00, 0x00, 0x01,        // 3-byte start code
            0x67, 0x42, 0xC0, 0x0D,  // [9..<13] SPS (shortened)
            0x00, 0x00, 0x00, 0x01,  // 4-byte start code: its leading zero is not part of the SPS
            0x65, 0x88, 0x84, 0x00, 0x21,  // [17..<22] IDR slice (00 inside is fine)
        ]
        #expect(H264NALUnits.isAnnexB(data))
        #expect(try H264NALUnits.nalUnitRanges(in: data) == [4..<6, 9..<13, 17..<22])
    }

    @Test("Annex B starting with a 3-byte start code")
    func annexBThreeByteFirst() throws {
        let data: [UInt8] = [
            0x00, 0x00, 0x01,        // 3-byte start code
            0x41, 0x9A, 0x02,        // [3..<6] non-IDR slice
            0x00, 0x00, 0x01,        // 3-byte start code
            0x41, 0x9B,              // [9..<11] second slice
        ]
        #expect(H264NALUnits.isAnnexB(data))
        #expect(try H264NALUnits.nalUnitRanges(in: data) == [3..<6, 9..<11])
    }

    @Test("empty NAL units between adjacent start codes are dropped")
    func annexBAdjacentStartCodes() throws {
        let data: [UInt8] = [
            0x00, 0x00, 0x00, 0x01,  // start code
            0x00, 0x00, 0x01,        // another one right after: nothing between them
            0x65, 0x01,              // [7..<9] IDR
        ]
        #expect(try H264NALUnits.nalUnitRanges(in: data) == [7..<9])
    }

    @Test("a start code far into a long NAL unit is found (fast-skip path)")
    func annexBLongNALs() throws {
        let first = [0x65] + (0..<997).map { UInt8(4 + $0 % 200) }  // no bytes 0/1: every stride skips
        let second = [0x41] + Array(repeating: UInt8(0xFF), count: 501)
        for shift in 0..<3 {  // start code at each phase of the 3-byte stride
            let padded = Array(first.prefix(first.count - shift))
            let data = annexB([padded, second])
            let n = padded.count
            #expect(try H264NALUnits.nalUnitRanges(in: data) == [4..<4 + n, 8 + n..<8 + n + 502], "shift \(shift)")
        }
    }

    @Test("trailing zero bytes at the end of an Annex B access unit are not part of the last NAL unit")
    func annexBTrailingZeros() throws {
        let data: [UInt8] = [
            0x00, 0x00, 0x00, 0x01,  // start code
            0x65, 0x88, 0x80,        // [4..<7] IDR slice, ends with rbsp_stop_one_bit
            0x00, 0x00,              // trailing_zero_8bits (Annex B §B.1.1)
        ]
        #expect(try H264NALUnits.nalUnitRanges(in: data) == [4..<7])
    }

    @Test("4-byte length-prefixed NAL units")
    func lengthPrefixedSplit() throws {
        let data: [UInt8] = [
            0x00, 0x00, 0x00, 0x02,  // length 2
            0x09, 0xF0,              // [4..<6] AUD
            0x00, 0x00, 0x00, 0x03,  // length 3
            0x65, 0x88, 0x84,        // [10..<13] IDR
        ]
        #expect(!H264NALUnits.isAnnexB(data))
        #expect(try H264NALUnits.nalUnitRanges(in: data) == [4..<6, 10..<13])
        // The same access unit in Annex B (3- and 4-byte start codes) converts to exactly these bytes.
        #expect(try H264NALUnits.lengthPrefixed([0, 0, 0, 1, 0x09, 0xF0, 0, 0, 1, 0x65, 0x88, 0x84]) == data)
        #expect(try H264NALUnits.lengthPrefixed(data) == data)
    }

    @Test("malformed length prefixes are errors")
    func lengthPrefixedMalformed() {
        // Length 100 with 3 bytes following.
        expectParseError(.invalid("NAL length 100 at byte 0 exceeds the sample")) {
            _ = try H264NALUnits.nalUnitRanges(in: [0x00, 0x00, 0x00, 0x64, 0x65, 0x88, 0x84])
        }
        // A valid NAL unit, then 2 stray bytes that cannot hold a length.
        expectParseError(.invalid("NAL length prefix cut short at byte 6")) {
            _ = try H264NALUnits.nalUnitRanges(in: [0x00, 0x00, 0x00, 0x02, 0x09, 0xF0, 0x00, 0x00])
        }
        // Length 0 (would loop forever if accepted): 00 00 00 00 is not a start code either.
        expectParseError(.invalid("NAL length 0 at byte 0 exceeds the sample")) {
            _ = try H264NALUnits.nalUnitRanges(in: [0x00, 0x00, 0x00, 0x00, 0x65])
        }
    }

    @Test("a length-prefixed NAL unit of 256-511 bytes is not mistaken for Annex B")
    func lengthPrefixedLooksLikeStartCode() throws {
        let slice = pSlice(300)  // length 300 = 00 00 01 2C
        let data = lengthPrefixed([slice])
        #expect(Array(data.prefix(4)) == [0x00, 0x00, 0x01, 0x2C])
        #expect(try H264NALUnits.nalUnitRanges(in: data) == [4..<304])
    }

    @Test("emulation prevention: 00 00 03 loses the 03, nothing else changes")
    func emulationPrevention() {
        #expect(H264NALUnits.removeEmulationPrevention([0x00, 0x00, 0x03, 0x01]) == [0x00, 0x00, 0x01])
        #expect(H264NALUnits.removeEmulationPrevention([0x00, 0x00, 0x03, 0x03]) == [0x00, 0x00, 0x03])  // second 03 is data
        #expect(H264NALUnits.removeEmulationPrevention([0x00, 0x00, 0x03, 0x00, 0x00, 0x03, 0x00]) == [0x00, 0x00, 0x00, 0x00, 0x00])
        #expect(H264NALUnits.removeEmulationPrevention([0x00, 0x03, 0x00, 0x03]) == [0x00, 0x03, 0x00, 0x03])  // one zero is not enough
        #expect(H264NALUnits.removeEmulationPrevention([0x12, 0x00, 0x00, 0x03]) == [0x12, 0x00, 0x00])  // cabac_zero_word at the end
        #expect(H264NALUnits.removeEmulationPrevention([0x00, 0x00, 0x02, 0x03]) == [0x00, 0x00, 0x02, 0x03])
        #expect(H264NALUnits.removeEmulationPrevention([]) == [])
    }
}

@Suite("OpusHead")
struct OpusHeadTests {
    @Test("stereo identification header")
    func stereo() throws {
        let head = try OpusHead(bytes: opusHeadStereoBytes)
        #expect(head == OpusHead(channelCount: 2, preSkip: 312, inputSampleRate: 48000, outputGain: 0,
                                 channelMappingFamily: 0, channelMappingTable: []))
    }

    @Test("little-endian fields: 44.1 kHz input, negative gain, minor version 15 accepted")
    func littleEndianFields() throws {
        let bytes: [UInt8] = [
            0x4F, 0x70, 0x75, 0x73, 0x48, 0x65, 0x61, 0x64,  // "OpusHead"
            0x0F,                    // version 0.15: same major version, accepted
            0x01,                    // mono
            0x68, 0x01,              // pre-skip 360
            0x44, 0xAC, 0x00, 0x00,  // input sample rate 44100
            0x00, 0xFF,              // output gain -256 (LE 0xFF00)
            0x00,                    // family 0
        ]
        let head = try OpusHead(bytes: bytes)
        #expect(head.channelCount == 1)
        #expect(head.preSkip == 360)
        #expect(head.inputSampleRate == 44100)
        #expect(head.outputGain == -256)
        // Encoding writes version 1 and otherwise the same bytes, and reads back equal.
        #expect(head.bytes == Array(bytes[0..<8]) + [0x01] + Array(bytes[9...]))
        #expect(try OpusHead(bytes: head.bytes) == head)
    }

    @Test("mapping family 1 with six channels reads stream/coupled counts and the mapping")
    func surround() throws {
        let bytes: [UInt8] = Array("OpusHead".utf8) + [
            0x01, 0x06,              // version 1, 6 channels
            0x38, 0x01,              // pre-skip 312
            0x80, 0xBB, 0x00, 0x00,  // 48000
            0x00, 0x00,              // gain 0
            0x01,                    // family 1
            0x04, 0x02,              // stream count 4, coupled count 2
            0x00, 0x04, 0x01, 0x02, 0x03, 0x05,  // channel mapping
        ]
        let head = try OpusHead(bytes: bytes)
        #expect(head.channelMappingFamily == 1)
        #expect(head.channelMappingTable == [4, 2, 0, 4, 1, 2, 3, 5])

        expectParseError(.truncated(field: "OpusHead channel mapping", needed: 8, available: 3)) {
            _ = try OpusHead(bytes: Array(bytes.prefix(22)))
        }
    }

    @Test("bad magic, short packet, 0 channels, major version 1")
    func rejected() {
        var tags = opusHeadStereoBytes
        tags.replaceSubrange(4..<8, with: Array("Tags".utf8))  // "OpusTags": the comment header
        expectParseError(.invalid("not an OpusHead packet")) { _ = try OpusHead(bytes: tags) }
        expectParseError(.invalid("not an OpusHead packet")) { _ = try OpusHead(bytes: Array(opusHeadStereoBytes.prefix(18))) }
        var silent = opusHeadStereoBytes
        silent[9] = 0
        expectParseError(.invalid("OpusHead with 0 channels")) { _ = try OpusHead(bytes: silent) }
        var major1 = opusHeadStereoBytes
        major1[8] = 0x10
        expectParseError(.unsupported("OpusHead major version 1")) { _ = try OpusHead(bytes: major1) }
    }

    @Test("mapping family 0 allows only mono or stereo")
    func familyZeroThreeChannels() {
        var three = opusHeadStereoBytes
        three[9] = 3
        expectParseError(.invalid("mapping family 0 allows 1 or 2 channels")) { _ = try OpusHead(bytes: three) }
    }
}

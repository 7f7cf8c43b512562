@testable import MP4
import Testing

/// Codec configuration: `avcC` (ISO/IEC 14496-15 §5.3.3.1), `avc1` (§5.4.2 + 14496-12 §12.1.3),
/// `dOps` and `Opus` (Encapsulation of Opus in ISO BMFF §4.3), `stsd` (14496-12 §8.5.2).
@Suite("Sample entries: avcC, avc1, dOps, Opus, stsd")
struct SampleEntryTests {
    static var avcC720p: [UInt8] {
        [
            0x00, 0x00, 0x00, 0x37,  // size 55
            0x61, 0x76, 0x63, 0x43,  // 'avcC'
            0x01,                    // configurationVersion 1
            0x64,                    // AVCProfileIndication 100 (High)
            0x00,                    // profile_compatibility
            0x1F,                    // AVCLevelIndication 31
            0xFF,                    // reserved '111111' + lengthSizeMinusOne 3
            0xE1,                    // reserved '111' + numOfSequenceParameterSets 1
            0x00, 0x1A,              // sequenceParameterSetLength 26
        ] + X264.sps720p + [         // the SPS NAL unit
            0x01,                    // numOfPictureParameterSets 1
            0x00, 0x06,              // pictureParameterSetLength 6
        ] + X264.pps720p + [         // the PPS NAL unit
            0xFD,                    // reserved '111111' + chroma_format 1 (4:2:0)
            0xF8,                    // reserved '11111' + bit_depth_luma_minus8 0
            0xF8,                    // reserved '11111' + bit_depth_chroma_minus8 0
            0x00,                    // numOfSequenceParameterSetExt 0
        ]
    }

    @Test("avcC for High profile carries the 4-byte chroma/bit-depth extension")
    func avcConfigurationHigh() throws {
        let info = try H264SequenceParameterSet(nalUnit: X264.sps720p)
        let avcC = AVCConfigurationBox(sps: X264.sps720p, pps: X264.pps720p, info: info)
        #expect(avcC.encoded() == Self.avcC720p)
        let decoded = try decodeBox(AVCConfigurationBox.self, from: Self.avcC720p)
        #expect(decoded == avcC)
        #expect(decoded.highProfileExtension?.chromaFormat == 1)
        #expect(decoded.highProfileExtension?.lumaDepthMinus8 == 0)
        #expect(decoded.highProfileExtension?.chromaDepthMinus8 == 0)
    }

    @Test("avcC for Baseline has no extension")
    func avcConfigurationBaseline() throws {
        let info = try H264SequenceParameterSet(nalUnit: X264.sps240p)
        let avcC = AVCConfigurationBox(sps: X264.sps240p, pps: X264.pps240p, info: info)
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x30,  // size 48
            0x61, 0x76, 0x63, 0x43,  // 'avcC'
            0x01,                    // configurationVersion 1
            0x42,                    // AVCProfileIndication 66 (Baseline)
            0xC0,                    // profile_compatibility: constraint_set0/1 (Constrained Baseline)
            0x0D,                    // AVCLevelIndication 13
            0xFF,                    // lengthSizeMinusOne 3
            0xE1,                    // 1 SPS
            0x00, 0x18,              // SPS length 24
        ] + X264.sps240p + [
            0x01,                    // 1 PPS
            0x00, 0x05,              // PPS length 5
        ] + X264.pps240p             // and nothing after it: profile 66 has no extension
        #expect(avcC.highProfileExtension == nil)
        #expect(avcC.encoded() == expected)
        #expect(try decodeBox(AVCConfigurationBox.self, from: expected) == avcC)
    }

    @Test("avcC from an older High-profile file without the extension still decodes")
    func avcConfigurationHighWithoutExtension() throws {
        // Same record as avcC720p without its last 4 bytes, size adjusted: 51.
        let old = [0x00, 0x00, 0x00, 0x33] + Array(Self.avcC720p[4..<51])
        let decoded = try decodeBox(AVCConfigurationBox.self, from: old)
        #expect(decoded.profile == 100)
        #expect(decoded.sequenceParameterSets == [X264.sps720p])
        #expect(decoded.pictureParameterSets == [X264.pps720p])
        #expect(decoded.highProfileExtension == nil)
    }

    @Test("avcC with a 10-bit 4:2:2 extension masks the reserved bits")
    func avcConfigurationExtensionValues() throws {
        var bytes = Self.avcC720p
        bytes[9] = 122           // High 4:2:2 profile
        bytes[51] = 0xFE         // reserved + chroma_format 2
        bytes[52] = 0xFA         // reserved + luma depth 10 - 8 = 2
        bytes[53] = 0xFA         // reserved + chroma depth 2
        let decoded = try decodeBox(AVCConfigurationBox.self, from: bytes)
        #expect(decoded.highProfileExtension.map { [$0.chromaFormat, $0.lumaDepthMinus8, $0.chromaDepthMinus8] } == [2, 2, 2])
        #expect(decoded.encoded() == bytes)
    }

    @Test("avcC refuses configurationVersion 2 and 2-byte NAL lengths")
    func avcConfigurationUnsupported() {
        var v2 = Self.avcC720p
        v2[8] = 2
        expectParseError(.unsupported("avcC configurationVersion")) { _ = try decodeBox(AVCConfigurationBox.self, from: v2) }
        var twoByteLengths = Self.avcC720p
        twoByteLengths[12] = 0xFD  // lengthSizeMinusOne 1
        expectParseError(.unsupported("NAL length size other than 4")) { _ = try decodeBox(AVCConfigurationBox.self, from: twoByteLengths) }
    }

    @Test("avc1 visual sample entry for 1280x720")
    func avcSampleEntry() throws {
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x8D,  // size 141 = 8 + 78 + 55
            0x61, 0x76, 0x63, 0x31,  // 'avc1'
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // reserved[6]
            0x00, 0x01,              // data_reference_index 1
            0x00, 0x00,              // pre_defined
            0x00, 0x00,              // reserved
            0x00, 0x00, 0x00, 0x00,  // pre_defined[0]
            0x00, 0x00, 0x00, 0x00,  // pre_defined[1]
            0x00, 0x00, 0x00, 0x00,  // pre_defined[2]
            0x05, 0x00,              // width 1280
            0x02, 0xD0,              // height 720
            0x00, 0x48, 0x00, 0x00,  // horizresolution 72 dpi (16.16)
            0x00, 0x48, 0x00, 0x00,  // vertresolution 72 dpi
            0x00, 0x00, 0x00, 0x00,  // reserved
            0x00, 0x01,              // frame_count 1
        ] + Array(repeating: 0, count: 32) + [  // compressorname: empty Pascal string, 32 bytes
            0x00, 0x18,              // depth 24 (colour, no alpha)
            0xFF, 0xFF,              // pre_defined -1
        ] + Self.avcC720p            // the avcC child
        #expect(Fixtures.avc1.encoded() == expected)
        #expect(Fixtures.avc1.width == 1280 && Fixtures.avc1.height == 720)
        #expect(try decodeBox(AVCSampleEntry.self, from: expected) == Fixtures.avc1)
    }

    @Test("avc1 without avcC is refused")
    func avcSampleEntryMissingConfiguration() {
        let bytes = Array(Fixtures.avc1.encoded().prefix(86))  // header + the 78 fixed bytes, no child
        var truncatedSize = bytes
        truncatedSize[3] = 86  // size 86
        expectParseError(.missingBox("avcC", in: "avc1")) { _ = try decodeBox(AVCSampleEntry.self, from: truncatedSize) }
    }

    static let dOpsStereo: [UInt8] = [
        0x00, 0x00, 0x00, 0x13,  // size 19
        0x64, 0x4F, 0x70, 0x73,  // 'dOps'
        0x00,                    // Version 0 (no version/flags: dOps is a plain box)
        0x02,                    // OutputChannelCount 2
        0x01, 0x38,              // PreSkip 312 (big-endian, unlike OpusHead)
        0x00, 0x00, 0xBB, 0x80,  // InputSampleRate 48000
        0x00, 0x00,              // OutputGain 0
        0x00,                    // ChannelMappingFamily 0: no mapping table
    ]

    @Test("dOps from a stereo OpusHead")
    func opusSpecificStereo() throws {
        let head = try OpusHead(bytes: opusHeadStereoBytes)
        let dOps = OpusSpecificBox(head: head)
        #expect(dOps.encoded() == Self.dOpsStereo)
        #expect(try decodeBox(OpusSpecificBox.self, from: Self.dOpsStereo) == dOps)
    }

    @Test("dOps with mapping family 1 (5.1) and a negative output gain")
    func opusSpecificSurround() throws {
        let head = OpusHead(channelCount: 6, preSkip: 3840, inputSampleRate: 44100, outputGain: -256,
                            channelMappingFamily: 1, channelMappingTable: [4, 2, 0, 4, 1, 2, 3, 5])
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x1B,  // size 27
            0x64, 0x4F, 0x70, 0x73,  // 'dOps'
            0x00,                    // Version 0
            0x06,                    // OutputChannelCount 6
            0x0F, 0x00,              // PreSkip 3840
            0x00, 0x00, 0xAC, 0x44,  // InputSampleRate 44100
            0xFF, 0x00,              // OutputGain -256 (Q7.8: -1 dB)
            0x01,                    // ChannelMappingFamily 1 (Vorbis order)
            0x04,                    // StreamCount 4
            0x02,                    // CoupledCount 2
            0x00, 0x04, 0x01, 0x02, 0x03, 0x05,  // ChannelMapping[6]
        ]
        let dOps = OpusSpecificBox(head: head)
        #expect(dOps.encoded() == expected)
        #expect(try decodeBox(OpusSpecificBox.self, from: expected) == dOps)
    }

    @Test("dOps with Version 1 is refused")
    func opusSpecificVersion() {
        var bytes = Self.dOpsStereo
        bytes[8] = 1
        expectParseError(.unsupported("dOps version")) { _ = try decodeBox(OpusSpecificBox.self, from: bytes) }
    }

    @Test("Opus audio sample entry: capital O, samplerate 48000 << 16")
    func opusSampleEntry() throws {
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x37,  // size 55 = 8 + 28 + 19
            0x4F, 0x70, 0x75, 0x73,  // 'Opus' (capital O)
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // reserved[6]
            0x00, 0x01,              // data_reference_index 1
            0x00, 0x00, 0x00, 0x00,  // reserved[0]
            0x00, 0x00, 0x00, 0x00,  // reserved[1]
            0x00, 0x02,              // channelcount 2
            0x00, 0x10,              // samplesize 16
            0x00, 0x00,              // pre_defined
            0x00, 0x00,              // reserved
            0xBB, 0x80, 0x00, 0x00,  // samplerate 48000.0 (16.16)
        ] + Self.dOpsStereo
        #expect(Fixtures.opus.encoded() == expected)
        #expect(try decodeBox(OpusSampleEntry.self, from: expected) == Fixtures.opus)
    }

    @Test("stsd with one avc1 entry; unknown entries are read past as .other")
    func sampleDescription() throws {
        let stsd = SampleDescriptionBox(entries: [.avc(Fixtures.avc1)])
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x9D,  // size 157 = 8 + 8 + 141
            0x73, 0x74, 0x73, 0x64,  // 'stsd'
            0x00, 0x00, 0x00, 0x00,  // version 0, flags 0
            0x00, 0x00, 0x00, 0x01,  // entry_count 1
        ] + Fixtures.avc1.encoded()
        #expect(stsd.encoded() == expected)
        #expect(try decodeBox(SampleDescriptionBox.self, from: expected) == stsd)

        let foreign = box("stsd", [0, 0, 0, 0,  0, 0, 0, 2]   // entry_count 2
                                  + box("mp4a", Array(repeating: 0, count: 28))  // an AAC entry we do not parse
                                  + Fixtures.opus.encoded())
        #expect(try decodeBox(SampleDescriptionBox.self, from: foreign).entries == [.other("mp4a"), .opus(Fixtures.opus)])
    }
}

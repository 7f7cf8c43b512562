import TestSupport
import Shared
@testable import MP4
import Testing

// Shared helpers for the MP4 tests: box decoding, round-trip checks, a seeded RNG and
// real-world fixtures (SPS/PPS from x264, OpusHead, realistic moov/moof contents).

// MARK: - Bytes

/// The four ASCII bytes of a box type or brand, for annotated byte vectors.
func ascii(_ text: String) -> [UInt8] {
    let bytes = Array(text.utf8)
    precondition(bytes.count == 4)
    return bytes
}

/// Big-endian bytes of an unsigned value (for building vectors with computed sizes).
func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(truncatingIfNeeded: v >> 16), UInt8(truncatingIfNeeded: v >> 8), UInt8(truncatingIfNeeded: v)] }
func be16(_ v: UInt16) -> [UInt8] { [UInt8(v >> 8), UInt8(truncatingIfNeeded: v)] }

/// Wraps payload bytes into a compact box: 32-bit size + type.
func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
    be32(UInt32(8 + payload.count)) + ascii(type) + payload
}


// MARK: - Box decoding

/// Reads one box header from `bytes` and decodes its payload as `B`, the way the reader does.
/// Checks that the header covers exactly `bytes` and that the decoder consumed the whole payload.
func decodeBox<B: DecodableBox>(_: B.Type, from bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) throws(MP4ParseError) -> B {
    var reader = ByteReader(bytes)
    let (header, p) = try reader.nextBox()
    #expect(header.type == B.boxType, "box type", sourceLocation: sourceLocation)
    #expect(header.size == bytes.count, "header size", sourceLocation: sourceLocation)
    var payload = p
    let decoded = try B(payload: &payload)
    #expect(payload.remaining == 0, "\(B.boxType) left \(payload.remaining) payload bytes unread", sourceLocation: sourceLocation)
    return decoded
}

/// Encode → check declared size → decode → compare, and encode again to check the bytes are stable.
@discardableResult
func expectRoundTrip<B: DecodableBox & Equatable>(_ box: B, sourceLocation: SourceLocation = #_sourceLocation) throws -> [UInt8] {
    let bytes = box.encoded()
    #expect(box.size == bytes.count, "\(B.boxType): size \(box.size) but encoded \(bytes.count) bytes", sourceLocation: sourceLocation)
    let decoded = try decodeBox(B.self, from: bytes, sourceLocation: sourceLocation)
    #expect(decoded == box, "\(B.boxType) did not survive encode → decode", sourceLocation: sourceLocation)
    #expect(decoded.encoded() == bytes, "\(B.boxType) re-encoded differently", sourceLocation: sourceLocation)
    return bytes
}

/// Expects `body` to throw exactly `expected`, comparing every associated value.
func expectParseError(_ expected: MP4ParseError, sourceLocation: SourceLocation = #_sourceLocation,
                      _ body: () throws -> Void) {
    do {
        try body()
        Issue.record("expected \(expected), nothing was thrown", sourceLocation: sourceLocation)
    } catch let error as MP4ParseError {
        #expect(error == expected, sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected \(expected), got \(error)", sourceLocation: sourceLocation)
    }
}

extension MP4ParseError {
    /// The case without its associated values.
    var kind: String {
        switch self {
        case .truncated: "truncated"
        case .implausibleCount: "implausibleCount"
        case .badBoxSize: "badBoxSize"
        case .unexpectedBox: "unexpectedBox"
        case .missingBox: "missingBox"
        case .unsupported: "unsupported"
        case .invalid: "invalid"
        }
    }
}


// MARK: - Real H.264 parameter sets

/// Parameter sets produced by x264 (ffmpeg 6, `-f lavfi -i testsrc2=size=WxH:rate=30 -frames:v 1
/// -c:v libx264 [-profile:v P] -bsf:v h264_mp4toannexb -f h264`), copied from `xxd` output.
enum X264 {
    /// High profile, 1280x720, level 3.1.
    static let sps720p: [UInt8] = [
        0x67,                   // forbidden 0, nal_ref_idc 3, nal_unit_type 7 (SPS)
        0x64,                   // profile_idc 100 (High)
        0x00,                   // constraint_set0..5 flags all 0
        0x1F,                   // level_idc 31
        // RBSP: sps_id 0 | chroma_format_idc 1 | bit_depth 8/8 | no scaling matrix |
        // log2_max_frame_num-4 = 0 | poc_type 0 (log2_max_poc_lsb-4 = 2) | 4 ref frames |
        // pic_width_in_mbs-1 = 79 (1280) | pic_height_in_map_units-1 = 44 (720) |
        // frame_mbs_only 1 | direct_8x8 1 | no cropping | VUI follows
        0xAC, 0xD9, 0x40, 0x50, 0x05, 0xBB,
        // VUI (not parsed), including two emulation-prevention bytes (00 00 03)
        0x01, 0x10, 0x00, 0x00, 0x03, 0x00, 0x10, 0x00, 0x00, 0x03, 0x03, 0xC0, 0xF1, 0x83, 0x19, 0x60,
    ]
    static let pps720p: [UInt8] = [
        0x68,                   // nal_ref_idc 3, nal_unit_type 8 (PPS)
        0xEB, 0xE3, 0xCB, 0x22, 0xC0,
    ]

    /// High profile, 1920x1080 coded as 1920x1088 (68 macroblock rows) with frame_crop_bottom_offset 4
    /// (4 × 2 luma lines = 8 lines cropped), level 4.0.
    static let sps1080p: [UInt8] = [
        0x67,                   // SPS NAL header
        0x64,                   // profile_idc 100 (High)
        0x00,                   // constraint flags
        0x28,                   // level_idc 40
        // sps_id 0 | chroma 1 | 8-bit | poc_type 0 | 4 refs | width_mbs-1 = 119 (1920) |
        // height_map_units-1 = 67 (1088) | frame_mbs_only 1 | direct_8x8 1 |
        // frame_cropping 1: left 0, right 0, top 0, bottom 4 | VUI follows
        0xAC, 0xD9, 0x40, 0x78, 0x02, 0x27, 0xE5, 0xC0, 0x44,
        0x00, 0x00, 0x03, 0x00, 0x04, 0x00, 0x00, 0x03, 0x00, 0xF0, 0x3C, 0x60, 0xC6, 0x58, // VUI
    ]

    /// Constrained Baseline, 320x240, level 1.3 (no High-profile fields, poc_type 2).
    static let sps240p: [UInt8] = [
        0x67,                   // SPS NAL header
        0x42,                   // profile_idc 66 (Baseline)
        0xC0,                   // constraint_set0_flag 1, constraint_set1_flag 1 (Constrained Baseline)
        0x0D,                   // level_idc 13
        // sps_id 0 | log2_max_frame_num-4 = 0 | poc_type 2 | 3 refs | width_mbs-1 = 19 (320) |
        // height_map_units-1 = 14 (240) | frame_mbs_only 1 | direct_8x8 1 | no cropping | VUI
        0xD9, 0x01, 0x41, 0xFB,
        0x01, 0x10, 0x00, 0x00, 0x03, 0x00, 0x10, 0x00, 0x00, 0x03, 0x03, 0xC0, 0xF1, 0x42, 0xA4, 0x80, // VUI
    ]
    static let pps240p: [UInt8] = [0x68, 0xCB, 0x83, 0xCB, 0x20]

    /// High profile, 1920x1080 interlaced (`-x264-params interlaced=1`): frame_mbs_only 0, so a map
    /// unit is a macroblock pair: 34 map units × 32 = 1088 lines, crop bottom 2 × (2 × 2) = 8 lines.
    static let sps1080i: [UInt8] = [
        0x67, 0x64, 0x00, 0x28, // SPS, High, constraints 0, level 4.0
        // ... width_mbs-1 = 119 | height_map_units-1 = 33 | frame_mbs_only 0 | mb_adaptive 1 |
        // direct_8x8 1 | cropping: 0, 0, 0, 2 | VUI
        0xAC, 0xD9, 0x40, 0x78, 0x04, 0x4F, 0xDE, 0x02, 0x20,
        0x00, 0x00, 0x03, 0x00, 0x20, 0x00, 0x00, 0x07, 0x83, 0xE2, 0xC5, 0xB2, 0xC0,
    ]

    /// High 4:4:4 Predictive (profile 244), 640x480, yuv444p: chroma_format_idc 3, which adds a
    /// separate_colour_plane_flag bit before the bit depths.
    static let sps444: [UInt8] = [
        0x67, 0xF4, 0x00, 0x1E, // SPS, profile_idc 244, constraints 0, level 3.0
        // sps_id 0 | chroma_format_idc 3 | separate_colour_plane 0 | 8-bit | no scaling |
        // poc_type 0 | 4 refs | width_mbs-1 = 39 (640) | height-1 = 29 (480) | no cropping | VUI
        0x91, 0x9B, 0x28, 0x14, 0x07, 0xB6,
        0x02, 0x20, 0x00, 0x00, 0x03, 0x00, 0x20, 0x00, 0x00, 0x07, 0x81, 0xE2, 0xC5, 0xB2, 0xC0,
    ]

    /// Hand-assembled High-profile SPS with seq_scaling_matrix_present_flag 1, so the parser has to
    /// skip scaling lists correctly to find the picture size (176x144). Bit by bit:
    ///   1 sps_id=0 | 010 chroma=1 | 1 luma-8=0 | 1 chroma-8=0 | 0 qpprime | 1 scaling present |
    ///   1 list0 present, 000010001 delta_scale=se(-8) → nextScale 0: stop (use default) |
    ///   00000 lists 1-5 absent | 1 list6 (8x8) present, 010 delta=se(+1), then 63 × "1" delta=se(0) |
    ///   0 list7 absent | 1 log2_max_frame_num-4=0 | 011 poc_type=2 | 010 refs=1 | 0 gaps |
    ///   0001011 width_mbs-1=10 | 0001001 height-1=8 | 1 frame_mbs_only | 1 direct_8x8 | 0 no crop |
    ///   0 no VUI | 1 rbsp_stop_one_bit, 00 alignment
    static let spsScalingLists: [UInt8] = [
        0x67, 0x64, 0x00, 0x1E, // SPS, High, constraints 0, level 3.0
        0xAD, 0x84, 0x41, 0x5F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xD6, 0x82, 0xC4, 0xE4,
    ]
}

/// An IDR slice NAL unit (header + arbitrary slice bytes; the muxer does not parse slices).
func idrSlice(_ length: Int = 32, fill: UInt8 = 0xAB) -> [UInt8] { [0x65] + Array(repeating: fill, count: length - 1) }
/// A non-IDR slice NAL unit.
func pSlice(_ length: Int = 16, fill: UInt8 = 0x9A) -> [UInt8] { [0x41] + Array(repeating: fill, count: length - 1) }

/// 4-byte length-prefixed framing of NAL units (ISO/IEC 14496-15 §5.3.2, lengthSizeMinusOne 3).
func lengthPrefixed(_ nals: [[UInt8]]) -> [UInt8] { nals.flatMap { be32(UInt32($0.count)) + $0 } }
/// Annex B framing with 4-byte start codes.
func annexB(_ nals: [[UInt8]]) -> [UInt8] { nals.flatMap { [0, 0, 0, 1] + $0 } }

// MARK: - Opus

/// OpusHead (RFC 7845 §5.1) as libopus users emit it: stereo, pre-skip 312, 48 kHz, gain 0, family 0.
let opusHeadStereoBytes: [UInt8] = [
    0x4F, 0x70, 0x75, 0x73, 0x48, 0x65, 0x61, 0x64, // "OpusHead"
    0x01,                                           // version 1
    0x02,                                           // channel count 2
    0x38, 0x01,                                     // pre-skip 312 (little-endian 0x0138)
    0x80, 0xBB, 0x00, 0x00,                         // input sample rate 48000 (LE 0x0000BB80)
    0x00, 0x00,                                     // output gain 0
    0x00,                                           // channel mapping family 0
]

// MARK: - Tracks and realistic boxes

enum Fixtures {
    static let creation: UInt64 = 3_782_844_800 // 2023-11-14T22:13:20Z in seconds since 1904

    static func videoTrack(id: UInt32 = 1, label: String = "front", rotation: Int = 0) throws(MuxerError) -> PreparedTrack {
        try PreparedTrack(TrackConfiguration(id: id, label: label, codec: .h264(sps: X264.sps720p, pps: X264.pps720p), rotation: rotation))
    }

    static func audioTrack(id: UInt32 = 3, label: String = "mic") throws(MuxerError) -> PreparedTrack {
        try PreparedTrack(TrackConfiguration(id: id, label: label, codec: .opus(OpusHead(channelCount: 2, preSkip: 312))))
    }

    static var avc1: AVCSampleEntry {
        let info = try! H264SequenceParameterSet(nalUnit: X264.sps720p)
        return AVCSampleEntry(width: info.width, height: info.height,
                              configuration: AVCConfigurationBox(sps: X264.sps720p, pps: X264.pps720p, info: info))
    }

    static var opus: OpusSampleEntry {
        OpusSampleEntry(specific: OpusSpecificBox(head: OpusHead(channelCount: 2, preSkip: 312)))
    }

    /// A finished video sample table: 2 s of 30 fps with B-frames, a keyframe every 30 samples,
    /// two chunks, one of them beyond 4 GiB (co64).
    static var videoSampleTable: SampleTableBox {
        var stbl = SampleTableBox(description: SampleDescriptionBox(entries: [.avc(avc1)]))
        stbl.timeToSample = TimeToSampleBox(durations: Array(repeating: 3000, count: 59) + [3003])
        stbl.compositionOffsets = CompositionOffsetBox(offsets: (0..<60).map { [6000, 0, 3000][$0 % 3] })
        stbl.syncSamples = SyncSampleBox(sampleNumbers: [1, 31])
        stbl.sampleToChunk = SampleToChunkBox(samplesPerChunk: [30, 30])
        stbl.sampleSizes = SampleSizeBox(sizes: (0..<60).map { $0 % 30 == 0 ? 48_000 : UInt32(4_000 + $0) })
        stbl.chunkOffsets = ChunkOffsetBox(offsets: [1_024, 5_000_000_000])
        return stbl
    }

    /// A finished Opus sample table: 50 packets of 20 ms, one chunk, roll group −4.
    static var audioSampleTable: SampleTableBox {
        var stbl = SampleTableBox(description: SampleDescriptionBox(entries: [.opus(opus)]))
        stbl.timeToSample = TimeToSampleBox(durations: Array(repeating: 960, count: 50))
        stbl.sampleToChunk = SampleToChunkBox(samplesPerChunk: [25, 25])
        stbl.sampleSizes = SampleSizeBox(sizes: Array(repeating: 160, count: 50))
        stbl.chunkOffsets = ChunkOffsetBox(offsets: [600_000, 900_000])
        stbl.rollGroup = (RollGroupDescriptionBox(rollDistance: -4),
                          SampleToGroupBox(entries: [.init(sampleCount: 4, groupDescriptionIndex: 0),
                                                     .init(sampleCount: 46, groupDescriptionIndex: 1)]))
        return stbl
    }

    static var videoMedia: MediaBox {
        MediaBox(header: MediaHeaderBox(creationTime: creation, timescale: 90000, duration: 180_003),
                 handler: HandlerBox(handlerType: "vide", name: "front"),
                 information: MediaInformationBox(isAudio: false, sampleTable: videoSampleTable))
    }

    static var audioMedia: MediaBox {
        MediaBox(header: MediaHeaderBox(creationTime: creation, timescale: 48000, duration: 48_000),
                 handler: HandlerBox(handlerType: "soun", name: "mic"),
                 information: MediaInformationBox(isAudio: true, sampleTable: audioSampleTable))
    }

    static var videoTrak: TrackBox {
        TrackBox(header: TrackHeaderBox(trackID: 1, creationTime: creation, duration: 180_003, isAudio: false,
                                        width: 1280, height: 720, matrix: .rotation(90, width: 1280, height: 720)),
                 edit: EditBox(editList: EditListBox(entries: [.init(segmentDuration: 180_003, mediaTime: 3000)])),
                 media: videoMedia)
    }

    static var audioTrak: TrackBox {
        TrackBox(header: TrackHeaderBox(trackID: 3, creationTime: creation, duration: 93_600, isAudio: true,
                                        width: 0, height: 0, matrix: .identity),
                 edit: EditBox(editList: EditListBox(entries: [.init(segmentDuration: 3_600, mediaTime: -1),
                                                              .init(segmentDuration: 90_000, mediaTime: 312)])),
                 media: audioMedia)
    }

    static let recordingInfo = RecordingInfoBox(sessionOriginNanos: 1_699_999_999_000_000_000,
                                                segmentOriginNanos: 1_700_000_000_000_000_000,
                                                decodeOriginNanos: 1_700_000_000_500_000_000, segmentIndex: 2)

    /// A finalized (progressive) moov: rotated video with B-frames + Opus with pre-roll.
    static var finalMovie: MovieBox {
        MovieBox(header: MovieHeaderBox(creationTime: creation, timescale: 90000, duration: 180_003, nextTrackID: 4),
                 tracks: [videoTrak, audioTrak], extends: nil,
                 userData: UserDataBox(recordingInfo: recordingInfo))
    }

    /// A recording's init moov: empty tables + mvex, as MovieBuilder writes while recording.
    static func initMovie() throws -> MovieBox {
        MovieBuilder.initMovie(tracks: [try videoTrack(), try audioTrack()], creationTime: 1_700_000_000, info: recordingInfo)
    }

    /// One fragment: 15 video samples with B-frame offsets and 25 Opus packets.
    static var fragment: MovieFragmentBox {
        let offsets: [Int32] = [6000, 0, 3000]
        let video = (0..<15).map { (i: Int) -> TrackRunBox.Sample in
            let size: UInt32 = i == 0 ? 40_000 : 3_000 + UInt32(i)
            let flags: UInt32 = i == 0 ? TrackRunBox.syncSampleFlags : TrackRunBox.nonSyncSampleFlags
            return TrackRunBox.Sample(duration: 3000, size: size, flags: flags, compositionOffset: offsets[i % 3])
        }
        let audio = (0..<25).map { _ in TrackRunBox.Sample(duration: 960, size: 160, flags: TrackRunBox.syncSampleFlags, compositionOffset: 0) }
        return MovieFragmentBox(sequenceNumber: 7, trackFragments: [
            TrackFragmentBox(header: TrackFragmentHeaderBox(trackID: 1), decodeTime: TrackFragmentDecodeTimeBox(baseMediaDecodeTime: 270_000),
                             run: TrackRunBox(dataOffset: 1_024, samples: video)),
            TrackFragmentBox(header: TrackFragmentHeaderBox(trackID: 3), decodeTime: TrackFragmentDecodeTimeBox(baseMediaDecodeTime: 144_000),
                             run: TrackRunBox(dataOffset: 90_000, samples: audio)),
        ])
    }
}

/// A prepared sample for the interleaver; payload size is what counts against `maxQueuedBytes`.
func prepared(track: Int, dts: Int64, sequence: UInt64 = 0, bytes: Int = 10) -> PreparedSample {
    PreparedSample(trackIndex: track, sequence: sequence, pts: dts, dts: dts, duration: 0, isSync: true,
                   payload: Array(repeating: 0, count: bytes))
}

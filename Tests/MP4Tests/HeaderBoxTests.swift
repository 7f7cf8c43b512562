@testable import MP4
import Testing

/// Movie, track and media headers (ISO/IEC 14496-12 §8.2.2, §8.3.2, §8.4.2, §8.4.3, §12.1.2,
/// §12.2.2, §8.7.1-2) and our `mcrs` recording-info box.
@Suite("Header boxes: mvhd, tkhd, mdhd, hdlr, vmhd, smhd, dinf, udta/mcrs")
struct HeaderBoxTests {
    /// The identity matrix, as every mvhd and an unrotated tkhd carry it.
    static let identityMatrix: [UInt8] = [
        0x00, 0x01, 0x00, 0x00,  // a = 1.0 (16.16)
        0x00, 0x00, 0x00, 0x00,  // b = 0
        0x00, 0x00, 0x00, 0x00,  // u = 0 (2.30)
        0x00, 0x00, 0x00, 0x00,  // c = 0
        0x00, 0x01, 0x00, 0x00,  // d = 1.0
        0x00, 0x00, 0x00, 0x00,  // v = 0
        0x00, 0x00, 0x00, 0x00,  // x = 0
        0x00, 0x00, 0x00, 0x00,  // y = 0
        0x40, 0x00, 0x00, 0x00,  // w = 1.0 (2.30)
    ]

    /// Everything in mvhd after the times: rate, volume, reserved, matrix, pre_defined, next_track_ID.
    static func mvhdTail(nextTrackID: UInt8) -> [UInt8] {
        [
            0x00, 0x01, 0x00, 0x00,  // rate 1.0
            0x01, 0x00,              // volume 1.0
            0x00, 0x00,              // reserved
            0x00, 0x00, 0x00, 0x00,  // reserved[0]
            0x00, 0x00, 0x00, 0x00,  // reserved[1]
        ] + identityMatrix + Array(repeating: 0, count: 24)  // pre_defined[6]
            + [0x00, 0x00, 0x00, nextTrackID]  // next_track_ID
    }

    @Test("mvhd version 0")
    func movieHeaderV0() throws {
        let mvhd = MovieHeaderBox(creationTime: Fixtures.creation, timescale: 90000, duration: 5_400_000, nextTrackID: 4)
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x6C,  // size 108
            0x6D, 0x76, 0x68, 0x64,  // 'mvhd'
            0x00,                    // version 0
            0x00, 0x00, 0x00,        // flags 0
            0xE1, 0x79, 0xA1, 0x80,  // creation_time 3_782_844_800 (2023-11-14, 1904 epoch)
            0xE1, 0x79, 0xA1, 0x80,  // modification_time
            0x00, 0x01, 0x5F, 0x90,  // timescale 90000
            0x00, 0x52, 0x65, 0xC0,  // duration 5_400_000 (60 s)
        ] + Self.mvhdTail(nextTrackID: 4)
        #expect(mvhd.encoded() == expected)
        #expect(mvhd.size == 108)
        #expect(try decodeBox(MovieHeaderBox.self, from: expected) == mvhd)
    }

    @Test("mvhd switches to version 1 when the duration exceeds 2^32 - 1")
    func movieHeaderV1() throws {
        let mvhd = MovieHeaderBox(creationTime: Fixtures.creation, timescale: 90000, duration: 0x1_0000_0000, nextTrackID: 2)
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x78,  // size 120
            0x6D, 0x76, 0x68, 0x64,  // 'mvhd'
            0x01,                    // version 1: 64-bit times
            0x00, 0x00, 0x00,        // flags 0
            0x00, 0x00, 0x00, 0x00,  // creation_time (64-bit) high
            0xE1, 0x79, 0xA1, 0x80,  //   low: 3_782_844_800
            0x00, 0x00, 0x00, 0x00,  // modification_time high
            0xE1, 0x79, 0xA1, 0x80,  //   low
            0x00, 0x01, 0x5F, 0x90,  // timescale 90000
            0x00, 0x00, 0x00, 0x01,  // duration (64-bit) 2^32
            0x00, 0x00, 0x00, 0x00,
        ] + Self.mvhdTail(nextTrackID: 2)
        #expect(mvhd.encoded() == expected)
        #expect(try decodeBox(MovieHeaderBox.self, from: expected) == mvhd)
        // 2^32 - 1 still fits version 0.
        #expect(MovieHeaderBox(creationTime: 0, timescale: 1, duration: 0xFFFF_FFFF, nextTrackID: 2).encoded()[8] == 0)
        #expect(MovieHeaderBox(creationTime: 0, timescale: 1, duration: 0xFFFF_FFFF, nextTrackID: 2).size == 108)
    }

    @Test("tkhd for a 1280x720 video rotated 90° clockwise")
    func trackHeaderVideoRotated90() throws {
        let tkhd = TrackHeaderBox(trackID: 1, creationTime: Fixtures.creation, duration: 180_003, isAudio: false,
                                  width: 1280, height: 720, matrix: .rotation(90, width: 1280, height: 720))
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x5C,  // size 92
            0x74, 0x6B, 0x68, 0x64,  // 'tkhd'
            0x00,                    // version 0
            0x00, 0x00, 0x03,        // flags: track_enabled | track_in_movie
            0xE1, 0x79, 0xA1, 0x80,  // creation_time
            0xE1, 0x79, 0xA1, 0x80,  // modification_time
            0x00, 0x00, 0x00, 0x01,  // track_ID 1
            0x00, 0x00, 0x00, 0x00,  // reserved
            0x00, 0x02, 0xBF, 0x23,  // duration 180_003 (movie timescale)
            0x00, 0x00, 0x00, 0x00,  // reserved[0]
            0x00, 0x00, 0x00, 0x00,  // reserved[1]
            0x00, 0x00,              // layer 0
            0x00, 0x00,              // alternate_group 0
            0x00, 0x00,              // volume 0 (video)
            0x00, 0x00,              // reserved
            0x00, 0x00, 0x00, 0x00,  // a = 0
            0x00, 0x01, 0x00, 0x00,  // b = 1.0
            0x00, 0x00, 0x00, 0x00,  // u = 0
            0xFF, 0xFF, 0x00, 0x00,  // c = -1.0
            0x00, 0x00, 0x00, 0x00,  // d = 0
            0x00, 0x00, 0x00, 0x00,  // v = 0
            0x02, 0xD0, 0x00, 0x00,  // x = 720.0 (the height: x' = h - y)
            0x00, 0x00, 0x00, 0x00,  // y = 0
            0x40, 0x00, 0x00, 0x00,  // w = 1.0
            0x05, 0x00, 0x00, 0x00,  // width 1280.0 (unrotated)
            0x02, 0xD0, 0x00, 0x00,  // height 720.0
        ]
        #expect(tkhd.encoded() == expected)
        #expect(try decodeBox(TrackHeaderBox.self, from: expected) == tkhd)
    }

    @Test("tkhd matrix for 180° and 270°", arguments: [
        (180, [
            0xFF, 0xFF, 0x00, 0x00,  // a = -1.0
            0x00, 0x00, 0x00, 0x00,  // b = 0
            0x00, 0x00, 0x00, 0x00,  // u = 0
            0x00, 0x00, 0x00, 0x00,  // c = 0
            0xFF, 0xFF, 0x00, 0x00,  // d = -1.0
            0x00, 0x00, 0x00, 0x00,  // v = 0
            0x05, 0x00, 0x00, 0x00,  // x = 1280.0 (width)
            0x02, 0xD0, 0x00, 0x00,  // y = 720.0 (height)
            0x40, 0x00, 0x00, 0x00,  // w = 1.0
        ] as [UInt8]),
        (270, [
            0x00, 0x00, 0x00, 0x00,  // a = 0
            0xFF, 0xFF, 0x00, 0x00,  // b = -1.0
            0x00, 0x00, 0x00, 0x00,  // u = 0
            0x00, 0x01, 0x00, 0x00,  // c = 1.0
            0x00, 0x00, 0x00, 0x00,  // d = 0
            0x00, 0x00, 0x00, 0x00,  // v = 0
            0x00, 0x00, 0x00, 0x00,  // x = 0
            0x05, 0x00, 0x00, 0x00,  // y = 1280.0 (width: y' = w - x)
            0x40, 0x00, 0x00, 0x00,  // w = 1.0
        ] as [UInt8]),
        (0, HeaderBoxTests.identityMatrix),
    ])
    func trackHeaderRotations(degrees: Int, matrix: [UInt8]) throws {
        let tkhd = TrackHeaderBox(trackID: 2, creationTime: 0, duration: 0, isAudio: false,
                                  width: 1280, height: 720, matrix: .rotation(degrees, width: 1280, height: 720))
        let bytes = tkhd.encoded()
        #expect(bytes.count == 92)
        // The matrix starts after header 8 + version/flags 4 + times/id 20 + reserved 8 + layer..reserved 8.
        #expect(Array(bytes[48..<84]) == matrix)
        #expect(try decodeBox(TrackHeaderBox.self, from: bytes) == tkhd)
    }

    @Test("tkhd for audio: volume 1.0, alternate_group 1, no size")
    func trackHeaderAudio() throws {
        let tkhd = TrackHeaderBox(trackID: 3, creationTime: Fixtures.creation, duration: 93_600, isAudio: true,
                                  width: 0, height: 0, matrix: .identity)
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x5C,  // size 92
            0x74, 0x6B, 0x68, 0x64,  // 'tkhd'
            0x00, 0x00, 0x00, 0x03,  // version 0, flags enabled | in_movie
            0xE1, 0x79, 0xA1, 0x80,  // creation_time
            0xE1, 0x79, 0xA1, 0x80,  // modification_time
            0x00, 0x00, 0x00, 0x03,  // track_ID 3
            0x00, 0x00, 0x00, 0x00,  // reserved
            0x00, 0x01, 0x6D, 0xA0,  // duration 93_600
            0x00, 0x00, 0x00, 0x00,  // reserved[0]
            0x00, 0x00, 0x00, 0x00,  // reserved[1]
            0x00, 0x00,              // layer 0
            0x00, 0x01,              // alternate_group 1
            0x01, 0x00,              // volume 1.0 (8.8)
            0x00, 0x00,              // reserved
        ] + Self.identityMatrix + [
            0x00, 0x00, 0x00, 0x00,  // width 0
            0x00, 0x00, 0x00, 0x00,  // height 0
        ]
        #expect(tkhd.encoded() == expected)
        #expect(try decodeBox(TrackHeaderBox.self, from: expected) == tkhd)
    }

    @Test("tkhd version 1 when the duration overflows 32 bits")
    func trackHeaderV1() throws {
        let tkhd = TrackHeaderBox(trackID: 1, creationTime: 5, duration: 0x1_0000_0001, isAudio: false,
                                  width: 320, height: 240, matrix: .identity)
        let bytes = tkhd.encoded()
        let expectedStart: [UInt8] = [
            0x00, 0x00, 0x00, 0x68,  // size 104
            0x74, 0x6B, 0x68, 0x64,  // 'tkhd'
            0x01, 0x00, 0x00, 0x03,  // version 1, flags 3
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05,  // creation_time 5 (64-bit)
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05,  // modification_time 5
            0x00, 0x00, 0x00, 0x01,  // track_ID 1
            0x00, 0x00, 0x00, 0x00,  // reserved
            0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01,  // duration 2^32 + 1
        ]
        #expect(Array(bytes.prefix(expectedStart.count)) == expectedStart)
        #expect(Array(bytes.suffix(8)) == [0x01, 0x40, 0x00, 0x00, 0x00, 0xF0, 0x00, 0x00]) // 320.0 x 240.0
        #expect(try decodeBox(TrackHeaderBox.self, from: bytes) == tkhd)
    }

    @Test("mdhd version 0 with language 'und'")
    func mediaHeaderV0() throws {
        let mdhd = MediaHeaderBox(creationTime: Fixtures.creation, timescale: 90000, duration: 180_003)
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x20,  // size 32
            0x6D, 0x64, 0x68, 0x64,  // 'mdhd'
            0x00, 0x00, 0x00, 0x00,  // version 0, flags 0
            0xE1, 0x79, 0xA1, 0x80,  // creation_time
            0xE1, 0x79, 0xA1, 0x80,  // modification_time
            0x00, 0x01, 0x5F, 0x90,  // timescale 90000
            0x00, 0x02, 0xBF, 0x23,  // duration 180_003
            0x55, 0xC4,              // pad 0, language 'und' = (21, 14, 4) in 5-bit letters - 0x60
            0x00, 0x00,              // pre_defined
        ]
        #expect(mdhd.language == 0x55C4)
        #expect(mdhd.encoded() == expected)
        #expect(mdhd.size == 32)
        #expect(try decodeBox(MediaHeaderBox.self, from: expected) == mdhd)
    }

    @Test("mdhd version 1 for 30 hours of Opus at 48 kHz")
    func mediaHeaderV1() throws {
        let mdhd = MediaHeaderBox(creationTime: Fixtures.creation, timescale: 48000, duration: 5_184_000_000)
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x2C,  // size 44
            0x6D, 0x64, 0x68, 0x64,  // 'mdhd'
            0x01, 0x00, 0x00, 0x00,  // version 1, flags 0
            0x00, 0x00, 0x00, 0x00, 0xE1, 0x79, 0xA1, 0x80,  // creation_time (64-bit)
            0x00, 0x00, 0x00, 0x00, 0xE1, 0x79, 0xA1, 0x80,  // modification_time
            0x00, 0x00, 0xBB, 0x80,  // timescale 48000
            0x00, 0x00, 0x00, 0x01, 0x34, 0xFD, 0x90, 0x00,  // duration 5_184_000_000 (30 h)
            0x55, 0xC4,              // language 'und'
            0x00, 0x00,              // pre_defined
        ]
        #expect(mdhd.encoded() == expected)
        #expect(mdhd.size == 44)
        #expect(try decodeBox(MediaHeaderBox.self, from: expected) == mdhd)
    }

    @Test("hdlr with a UTF-8 name, NUL-terminated")
    func handlerUTF8() throws {
        let hdlr = HandlerBox(handlerType: "vide", name: "Caméra avant")
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x2E,  // size 46
            0x68, 0x64, 0x6C, 0x72,  // 'hdlr'
            0x00, 0x00, 0x00, 0x00,  // version 0, flags 0
            0x00, 0x00, 0x00, 0x00,  // pre_defined
            0x76, 0x69, 0x64, 0x65,  // handler_type 'vide'
            0x00, 0x00, 0x00, 0x00,  // reserved[0]
            0x00, 0x00, 0x00, 0x00,  // reserved[1]
            0x00, 0x00, 0x00, 0x00,  // reserved[2]
            0x43, 0x61, 0x6D,        // "Cam"
            0xC3, 0xA9,              // "é" (U+00E9 in UTF-8)
            0x72, 0x61, 0x20,        // "ra "
            0x61, 0x76, 0x61, 0x6E, 0x74,  // "avant"
            0x00,                    // NUL terminator
        ]
        #expect(hdlr.encoded() == expected)
        #expect(try decodeBox(HandlerBox.self, from: expected) == hdlr)
    }

    @Test("hdlr decoding stops at the first NUL and accepts a name without one")
    func handlerNameTermination() throws {
        let withPadding = box("hdlr", [0, 0, 0, 0,  0, 0, 0, 0] + ascii("soun") + Array(repeating: 0, count: 12)
                                      + Array("mic".utf8) + [0x00, 0x00, 0x00])  // "mic" NUL + padding
        #expect(try decodeBox(HandlerBox.self, from: withPadding) == HandlerBox(handlerType: "soun", name: "mic"))
        let unterminated = box("hdlr", [0, 0, 0, 0,  0, 0, 0, 0] + ascii("soun") + Array(repeating: 0, count: 12)
                                       + Array("mic".utf8))  // QuickTime-style: no terminator
        #expect(try decodeBox(HandlerBox.self, from: unterminated) == HandlerBox(handlerType: "soun", name: "mic"))
    }

    @Test("vmhd: flags 1, graphicsmode copy, opcolor 0")
    func videoMediaHeader() throws {
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x14,  // size 20
            0x76, 0x6D, 0x68, 0x64,  // 'vmhd'
            0x00, 0x00, 0x00, 0x01,  // version 0, flags 1 (required by §12.1.2)
            0x00, 0x00,              // graphicsmode 0 (copy)
            0x00, 0x00, 0x00, 0x00,  // opcolor red, green
            0x00, 0x00,              // opcolor blue
        ]
        #expect(VideoMediaHeaderBox().encoded() == expected)
        #expect(try decodeBox(VideoMediaHeaderBox.self, from: expected) == VideoMediaHeaderBox())
    }

    @Test("smhd: balance 0")
    func soundMediaHeader() throws {
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x10,  // size 16
            0x73, 0x6D, 0x68, 0x64,  // 'smhd'
            0x00, 0x00, 0x00, 0x00,  // version 0, flags 0
            0x00, 0x00,              // balance 0 (centre)
            0x00, 0x00,              // reserved
        ]
        #expect(SoundMediaHeaderBox().encoded() == expected)
        #expect(try decodeBox(SoundMediaHeaderBox.self, from: expected) == SoundMediaHeaderBox())
    }

    @Test("dinf/dref/url: one self-contained data reference")
    func dataInformation() throws {
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x24,  // size 36
            0x64, 0x69, 0x6E, 0x66,  // 'dinf'
            0x00, 0x00, 0x00, 0x1C,  //   size 28
            0x64, 0x72, 0x65, 0x66,  //   'dref'
            0x00, 0x00, 0x00, 0x00,  //   version 0, flags 0
            0x00, 0x00, 0x00, 0x01,  //   entry_count 1
            0x00, 0x00, 0x00, 0x0C,  //     size 12
            0x75, 0x72, 0x6C, 0x20,  //     'url '
            0x00, 0x00, 0x00, 0x01,  //     version 0, flags 1: media data is in this file (no location)
        ]
        #expect(DataInformationBox().encoded() == expected)
        #expect(try decodeBox(DataInformationBox.self, from: expected) == DataInformationBox())
    }

    @Test("udta holding mcrs, the recording timeline anchors")
    func recordingInfoInUserData() throws {
        let udta = UserDataBox(recordingInfo: Fixtures.recordingInfo)
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x30,  // size 48
            0x75, 0x64, 0x74, 0x61,  // 'udta'
            0x00, 0x00, 0x00, 0x28,  //   size 40
            0x6D, 0x63, 0x72, 0x73,  //   'mcrs'
            0x00, 0x00, 0x00, 0x00,  //   version 0, flags 0
            0x17, 0x97, 0x9C, 0xFD,  //   session origin 1_699_999_999_000_000_000 ns
            0xFA, 0x8F, 0x36, 0x00,
            0x17, 0x97, 0x9C, 0xFE,  //   segment origin 1_700_000_000_000_000_000 ns
            0x36, 0x2A, 0x00, 0x00,
            0x17, 0x97, 0x9C, 0xFE,  //   decode origin 1_700_000_000_500_000_000 ns
            0x53, 0xF7, 0x65, 0x00,
            0x00, 0x00, 0x00, 0x02,  //   segment index 2
        ]
        #expect(udta.encoded() == expected)
        let decoded = try decodeBox(UserDataBox.self, from: expected)
        #expect(decoded == udta)
        #expect(decoded.recordingInfo?.segmentStartNanos == 1_000_000_000)
    }

    @Test("mcrs: negative origins survive, other versions are refused")
    func recordingInfoNegativeAndVersion() throws {
        let info = RecordingInfoBox(sessionOriginNanos: -5, segmentOriginNanos: 0, decodeOriginNanos: Int64.min, segmentIndex: .max)
        let bytes = info.encoded()
        #expect(Array(bytes[12..<20]) == [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFB])  // -5
        #expect(Array(bytes[28..<36]) == [0x80, 0, 0, 0, 0, 0, 0, 0])                        // Int64.min
        #expect(try decodeBox(RecordingInfoBox.self, from: bytes) == info)
        #expect(info.segmentStartNanos == 5)

        var v1 = bytes
        v1[8] = 1  // version 1: not ours
        expectParseError(.unsupported("mcrs version")) { _ = try decodeBox(RecordingInfoBox.self, from: v1) }
    }

    @Test("empty udta is an 8-byte box and decodes without recording info")
    func emptyUserData() throws {
        let udta = UserDataBox(recordingInfo: nil)
        #expect(udta.encoded() == [0x00, 0x00, 0x00, 0x08, 0x75, 0x64, 0x74, 0x61])  // size 8, 'udta'
        #expect(try decodeBox(UserDataBox.self, from: udta.encoded()) == udta)
    }
}

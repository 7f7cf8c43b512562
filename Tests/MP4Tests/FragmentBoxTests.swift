@testable import MP4
import Testing

/// Movie fragment boxes (ISO/IEC 14496-12 §8.8): trex/mvex, mfhd, tfhd, tfdt, trun.
@Suite("Fragment boxes: trex, mvex, mfhd, tfhd, tfdt, trun")
struct FragmentBoxTests {
    static func trex(_ id: UInt8) -> [UInt8] {
        [
            0x00, 0x00, 0x00, 0x20,  // size 32
            0x74, 0x72, 0x65, 0x78,  // 'trex'
            0x00, 0x00, 0x00, 0x00,  // version 0, flags 0
            0x00, 0x00, 0x00, id,    // track_ID
            0x00, 0x00, 0x00, 0x01,  // default_sample_description_index 1
            0x00, 0x00, 0x00, 0x00,  // default_sample_duration 0
            0x00, 0x00, 0x00, 0x00,  // default_sample_size 0
            0x00, 0x00, 0x00, 0x00,  // default_sample_flags 0
        ]
    }

    @Test("trex with neutral defaults")
    func trackExtends() throws {
        #expect(TrackExtendsBox(trackID: 1).encoded() == Self.trex(1))
        #expect(try decodeBox(TrackExtendsBox.self, from: Self.trex(1)) == TrackExtendsBox(trackID: 1))
    }

    @Test("mvex holds one trex per track")
    func movieExtends() throws {
        let mvex = MovieExtendsBox(trackExtends: [TrackExtendsBox(trackID: 1), TrackExtendsBox(trackID: 3)])
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x48,  // size 72
            0x6D, 0x76, 0x65, 0x78,  // 'mvex'
        ] + Self.trex(1) + Self.trex(3)
        #expect(mvex.encoded() == expected)
        #expect(try decodeBox(MovieExtendsBox.self, from: expected) == mvex)
    }

    @Test("mfhd carries the fragment sequence number")
    func movieFragmentHeader() throws {
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x10,  // size 16
            0x6D, 0x66, 0x68, 0x64,  // 'mfhd'
            0x00, 0x00, 0x00, 0x00,  // version 0, flags 0
            0x00, 0x00, 0x00, 0x07,  // sequence_number 7
        ]
        #expect(MovieFragmentHeaderBox(sequenceNumber: 7).encoded() == expected)
        #expect(try decodeBox(MovieFragmentHeaderBox.self, from: expected) == MovieFragmentHeaderBox(sequenceNumber: 7))
    }

    @Test("tfhd with only default-base-is-moof (0x020000)")
    func trackFragmentHeader() throws {
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x10,  // size 16
            0x74, 0x66, 0x68, 0x64,  // 'tfhd'
            0x00,                    // version 0
            0x02, 0x00, 0x00,        // flags: default-base-is-moof
            0x00, 0x00, 0x00, 0x01,  // track_ID 1
        ]
        let tfhd = TrackFragmentHeaderBox(trackID: 1)
        #expect(tfhd.flags == 0x02_0000)
        #expect(tfhd.encoded() == expected)
        #expect(try decodeBox(TrackFragmentHeaderBox.self, from: expected) == tfhd)
    }

    @Test("tfhd from another muxer: base_data_offset and defaults are read or skipped")
    func trackFragmentHeaderForeign() throws {
        let bytes: [UInt8] = [
            0x00, 0x00, 0x00, 0x28,  // size 40
            0x74, 0x66, 0x68, 0x64,  // 'tfhd'
            0x00,                    // version 0
            0x00, 0x00, 0x3B,        // flags: base_data_offset | sample_description_index | duration | size | flags
            0x00, 0x00, 0x00, 0x02,  // track_ID 2
            0x00, 0x00, 0x00, 0x01,  // base_data_offset 0x1_0000_0000
            0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x01,  // sample_description_index 1
            0x00, 0x00, 0x04, 0x00,  // default_sample_duration 1024
            0x00, 0x00, 0x01, 0x00,  // default_sample_size 256
            0x02, 0x00, 0x00, 0x00,  // default_sample_flags
        ]
        let tfhd = try decodeBox(TrackFragmentHeaderBox.self, from: bytes)
        #expect(tfhd.trackID == 2)
        #expect(tfhd.flags == 0x3B)
        #expect(tfhd.baseDataOffset == 0x1_0000_0000)
    }

    @Test("tfdt version 1: 64-bit base media decode time")
    func trackFragmentDecodeTime() throws {
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x14,  // size 20
            0x74, 0x66, 0x64, 0x74,  // 'tfdt'
            0x01, 0x00, 0x00, 0x00,  // version 1, flags 0
            0x00, 0x00, 0x00, 0x00,  // baseMediaDecodeTime 270000 (3 s at 90 kHz)
            0x00, 0x04, 0x1E, 0xB0,
        ]
        let tfdt = TrackFragmentDecodeTimeBox(baseMediaDecodeTime: 270_000)
        #expect(tfdt.encoded() == expected)
        #expect(try decodeBox(TrackFragmentDecodeTimeBox.self, from: expected) == tfdt)
        // Values past 32 bits are kept whole.
        try expectRoundTrip(TrackFragmentDecodeTimeBox(baseMediaDecodeTime: 0x1_2345_6789))
    }

    @Test("tfdt version 0 (32-bit) from other muxers is read")
    func trackFragmentDecodeTimeV0() throws {
        let bytes: [UInt8] = [
            0x00, 0x00, 0x00, 0x10,  // size 16
            0x74, 0x66, 0x64, 0x74,  // 'tfdt'
            0x00, 0x00, 0x00, 0x00,  // version 0
            0x00, 0x00, 0xBB, 0x80,  // baseMediaDecodeTime 48000
        ]
        #expect(try decodeBox(TrackFragmentDecodeTimeBox.self, from: bytes).baseMediaDecodeTime == 48000)
    }

    @Test("trun flags 0x701: data offset, duration, size, flags; no composition offsets")
    func trackRunWithoutCompositionOffsets() throws {
        let trun = TrackRunBox(dataOffset: 1024, samples: [
            .init(duration: 3000, size: 40_000, flags: TrackRunBox.syncSampleFlags, compositionOffset: 0),
            .init(duration: 3000, size: 3001, flags: TrackRunBox.nonSyncSampleFlags, compositionOffset: 0),
        ])
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x2C,  // size 44
            0x74, 0x72, 0x75, 0x6E,  // 'trun'
            0x00,                    // version 0
            0x00, 0x07, 0x01,        // flags: data-offset | duration | size | flags present
            0x00, 0x00, 0x00, 0x02,  // sample_count 2
            0x00, 0x00, 0x04, 0x00,  // data_offset 1024 (from the moof's first byte)
            0x00, 0x00, 0x0B, 0xB8,  // [0] sample_duration 3000
            0x00, 0x00, 0x9C, 0x40,  //     sample_size 40000
            0x02, 0x00, 0x00, 0x00,  //     sample_flags: depends_on 2 (I-frame), sync
            0x00, 0x00, 0x0B, 0xB8,  // [1] sample_duration 3000
            0x00, 0x00, 0x0B, 0xB9,  //     sample_size 3001
            0x01, 0x01, 0x00, 0x00,  //     sample_flags: depends_on 1, is_non_sync_sample
        ]
        #expect(trun.encoded() == expected)
        #expect(try decodeBox(TrackRunBox.self, from: expected) == trun)
    }

    @Test("trun flags 0xF01 with composition offsets, version 0 while all are non-negative")
    func trackRunWithCompositionOffsets() throws {
        let trun = TrackRunBox(dataOffset: 1024, samples: [
            .init(duration: 3000, size: 40_000, flags: TrackRunBox.syncSampleFlags, compositionOffset: 6000),
            .init(duration: 3000, size: 3001, flags: TrackRunBox.nonSyncSampleFlags, compositionOffset: 0),
        ])
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x34,  // size 52
            0x74, 0x72, 0x75, 0x6E,  // 'trun'
            0x00,                    // version 0
            0x00, 0x0F, 0x01,        // flags: data-offset | duration | size | flags | composition offset
            0x00, 0x00, 0x00, 0x02,  // sample_count 2
            0x00, 0x00, 0x04, 0x00,  // data_offset 1024
            0x00, 0x00, 0x0B, 0xB8,  // [0] duration 3000
            0x00, 0x00, 0x9C, 0x40,  //     size 40000
            0x02, 0x00, 0x00, 0x00,  //     flags: sync
            0x00, 0x00, 0x17, 0x70,  //     composition offset 6000
            0x00, 0x00, 0x0B, 0xB8,  // [1] duration 3000
            0x00, 0x00, 0x0B, 0xB9,  //     size 3001
            0x01, 0x01, 0x00, 0x00,  //     flags: non-sync
            0x00, 0x00, 0x00, 0x00,  //     composition offset 0
        ]
        #expect(trun.encoded() == expected)
        #expect(try decodeBox(TrackRunBox.self, from: expected) == trun)
    }

    @Test("trun version 1 when a composition offset is negative")
    func trackRunVersion1() throws {
        let trun = TrackRunBox(dataOffset: -8, samples: [
            .init(duration: 3000, size: 10, flags: TrackRunBox.syncSampleFlags, compositionOffset: 3000),
            .init(duration: 3000, size: 11, flags: TrackRunBox.nonSyncSampleFlags, compositionOffset: -3000),
        ])
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x34,  // size 52
            0x74, 0x72, 0x75, 0x6E,  // 'trun'
            0x01,                    // version 1: signed composition offsets
            0x00, 0x0F, 0x01,        // flags 0xF01
            0x00, 0x00, 0x00, 0x02,  // sample_count 2
            0xFF, 0xFF, 0xFF, 0xF8,  // data_offset -8 (signed)
            0x00, 0x00, 0x0B, 0xB8,  // [0] duration 3000
            0x00, 0x00, 0x00, 0x0A,  //     size 10
            0x02, 0x00, 0x00, 0x00,  //     flags: sync
            0x00, 0x00, 0x0B, 0xB8,  //     composition offset 3000
            0x00, 0x00, 0x0B, 0xB8,  // [1] duration 3000
            0x00, 0x00, 0x00, 0x0B,  //     size 11
            0x01, 0x01, 0x00, 0x00,  //     flags: non-sync
            0xFF, 0xFF, 0xF4, 0x48,  //     composition offset -3000
        ]
        #expect(trun.encoded() == expected)
        #expect(try decodeBox(TrackRunBox.self, from: expected) == trun)
    }

    @Test("trun from another muxer: first_sample_flags and fields taken from defaults")
    func trackRunForeign() throws {
        let bytes: [UInt8] = [
            0x00, 0x00, 0x00, 0x24,  // size 36
            0x74, 0x72, 0x75, 0x6E,  // 'trun'
            0x00,                    // version 0
            0x00, 0x02, 0x05,        // flags: data-offset | first-sample-flags | sample-size
            0x00, 0x00, 0x00, 0x03,  // sample_count 3
            0x00, 0x00, 0x00, 0x70,  // data_offset 112
            0x02, 0x00, 0x00, 0x00,  // first_sample_flags: sync
            0x00, 0x00, 0x01, 0x00,  // [0] size 256
            0x00, 0x00, 0x00, 0x80,  // [1] size 128
            0x00, 0x00, 0x00, 0x40,  // [2] size 64
        ]
        var reader = ByteReader(bytes)
        var (_, payload) = try reader.nextBox()
        let trun = try TrackRunBox(payload: &payload, defaultDuration: 1024, defaultSize: 0, defaultFlags: 0x0101_0000)
        #expect(trun.dataOffset == 112)
        #expect(trun.samples == [
            .init(duration: 1024, size: 256, flags: 0x0200_0000, compositionOffset: 0),
            .init(duration: 1024, size: 128, flags: 0x0101_0000, compositionOffset: 0),
            .init(duration: 1024, size: 64, flags: 0x0101_0000, compositionOffset: 0),
        ])
    }

    @Test("traf is tfhd + tfdt + one trun; two truns are refused")
    func trackFragment() throws {
        let traf = Fixtures.fragment.trackFragments[0]
        let bytes = traf.encoded()
        #expect(Array(bytes[0..<8]) == be32(UInt32(16 + 20 + traf.run.size + 8)) + ascii("traf"))
        #expect(Array(bytes[8..<24]) == TrackFragmentHeaderBox(trackID: 1).encoded())
        #expect(Array(bytes[24..<44]) == TrackFragmentDecodeTimeBox(baseMediaDecodeTime: 270_000).encoded())
        #expect(Array(bytes[44...]) == traf.run.encoded())
        #expect(try decodeBox(TrackFragmentBox.self, from: bytes) == traf)

        let twoRuns = box("traf", Array(bytes[8...]) + traf.run.encoded())
        expectParseError(.unsupported("traf with 2 trun boxes")) { _ = try decodeBox(TrackFragmentBox.self, from: twoRuns) }
        let noRun = box("traf", Array(bytes[8..<44]))
        expectParseError(.unsupported("traf with 0 trun boxes")) { _ = try decodeBox(TrackFragmentBox.self, from: noRun) }
    }

    @Test("moof: mfhd then one traf per track, in order")
    func movieFragment() throws {
        let moof = Fixtures.fragment
        let bytes = moof.encoded()
        let traf0 = moof.trackFragments[0].encoded()
        let traf1 = moof.trackFragments[1].encoded()
        #expect(bytes == be32(UInt32(8 + 16 + traf0.count + traf1.count)) + ascii("moof")
                + MovieFragmentHeaderBox(sequenceNumber: 7).encoded() + traf0 + traf1)
        #expect(try decodeBox(MovieFragmentBox.self, from: bytes) == moof)
    }
}

@testable import MP4
import Testing

/// Sample tables (ISO/IEC 14496-12 §8.6.1.2 stts, §8.6.1.3 ctts, §8.6.2 stss, §8.7.4 stsc,
/// §8.7.3.2 stsz, §8.7.5 stco/co64, §8.6.6 elst, §8.9.2-3 sbgp/sgpd).
@Suite("Sample table boxes")
struct SampleTableBoxTests {
    @Test("stts run-length codes per-sample durations")
    func timeToSample() throws {
        let stts = TimeToSampleBox(durations: [3000, 3000, 3000, 3003, 3000, 3000])
        #expect(stts.entries == [.init(count: 3, delta: 3000), .init(count: 1, delta: 3003), .init(count: 2, delta: 3000)])
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x28,  // size 40
            0x73, 0x74, 0x74, 0x73,  // 'stts'
            0x00, 0x00, 0x00, 0x00,  // version 0, flags 0
            0x00, 0x00, 0x00, 0x03,  // entry_count 3
            0x00, 0x00, 0x00, 0x03,  // sample_count 3
            0x00, 0x00, 0x0B, 0xB8,  //   sample_delta 3000
            0x00, 0x00, 0x00, 0x01,  // sample_count 1
            0x00, 0x00, 0x0B, 0xBB,  //   sample_delta 3003
            0x00, 0x00, 0x00, 0x02,  // sample_count 2
            0x00, 0x00, 0x0B, 0xB8,  //   sample_delta 3000
        ]
        #expect(stts.encoded() == expected)
        #expect(try decodeBox(TimeToSampleBox.self, from: expected) == stts)
    }

    @Test("stts for no samples is an empty table")
    func timeToSampleEmpty() {
        #expect(TimeToSampleBox(durations: []).encoded() == [
            0x00, 0x00, 0x00, 0x10,  // size 16
            0x73, 0x74, 0x74, 0x73,  // 'stts'
            0x00, 0x00, 0x00, 0x00,  // version 0, flags 0
            0x00, 0x00, 0x00, 0x00,  // entry_count 0
        ])
    }

    @Test("ctts version 0 for non-negative offsets")
    func compositionOffsetsV0() throws {
        let ctts = CompositionOffsetBox(offsets: [6000, 0, 3000, 3000])
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x28,  // size 40
            0x63, 0x74, 0x74, 0x73,  // 'ctts'
            0x00, 0x00, 0x00, 0x00,  // version 0 (unsigned offsets), flags 0
            0x00, 0x00, 0x00, 0x03,  // entry_count 3
            0x00, 0x00, 0x00, 0x01,  // sample_count 1
            0x00, 0x00, 0x17, 0x70,  //   sample_offset 6000
            0x00, 0x00, 0x00, 0x01,  // sample_count 1
            0x00, 0x00, 0x00, 0x00,  //   sample_offset 0
            0x00, 0x00, 0x00, 0x02,  // sample_count 2
            0x00, 0x00, 0x0B, 0xB8,  //   sample_offset 3000
        ]
        #expect(ctts.encoded() == expected)
        #expect(try decodeBox(CompositionOffsetBox.self, from: expected) == ctts)
    }

    @Test("ctts version 1 as soon as an offset is negative")
    func compositionOffsetsV1() throws {
        let ctts = CompositionOffsetBox(offsets: [0, -3000, -3000])
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x20,  // size 32
            0x63, 0x74, 0x74, 0x73,  // 'ctts'
            0x01, 0x00, 0x00, 0x00,  // version 1 (signed offsets), flags 0
            0x00, 0x00, 0x00, 0x02,  // entry_count 2
            0x00, 0x00, 0x00, 0x01,  // sample_count 1
            0x00, 0x00, 0x00, 0x00,  //   sample_offset 0
            0x00, 0x00, 0x00, 0x02,  // sample_count 2
            0xFF, 0xFF, 0xF4, 0x48,  //   sample_offset -3000
        ]
        #expect(ctts.encoded() == expected)
        #expect(try decodeBox(CompositionOffsetBox.self, from: expected) == ctts)
    }

    @Test("stss lists 1-based sync sample numbers")
    func syncSamples() throws {
        let stss = SyncSampleBox(sampleNumbers: [1, 31, 61])
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x1C,  // size 28
            0x73, 0x74, 0x73, 0x73,  // 'stss'
            0x00, 0x00, 0x00, 0x00,  // version 0, flags 0
            0x00, 0x00, 0x00, 0x03,  // entry_count 3
            0x00, 0x00, 0x00, 0x01,  // sample 1
            0x00, 0x00, 0x00, 0x1F,  // sample 31
            0x00, 0x00, 0x00, 0x3D,  // sample 61
        ]
        #expect(stss.encoded() == expected)
        #expect(try decodeBox(SyncSampleBox.self, from: expected) == stss)
    }

    @Test("stsc run-length codes samples per chunk by first chunk")
    func sampleToChunk() throws {
        let stsc = SampleToChunkBox(samplesPerChunk: [30, 30, 30, 12, 30])
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x34,  // size 52
            0x73, 0x74, 0x73, 0x63,  // 'stsc'
            0x00, 0x00, 0x00, 0x00,  // version 0, flags 0
            0x00, 0x00, 0x00, 0x03,  // entry_count 3
            0x00, 0x00, 0x00, 0x01,  // first_chunk 1
            0x00, 0x00, 0x00, 0x1E,  //   samples_per_chunk 30 (chunks 1-3)
            0x00, 0x00, 0x00, 0x01,  //   sample_description_index 1
            0x00, 0x00, 0x00, 0x04,  // first_chunk 4
            0x00, 0x00, 0x00, 0x0C,  //   samples_per_chunk 12
            0x00, 0x00, 0x00, 0x01,  //   sample_description_index 1
            0x00, 0x00, 0x00, 0x05,  // first_chunk 5
            0x00, 0x00, 0x00, 0x1E,  //   samples_per_chunk 30
            0x00, 0x00, 0x00, 0x01,  //   sample_description_index 1
        ]
        #expect(stsc.entries.map(\.firstChunk) == [1, 4, 5])
        #expect(stsc.encoded() == expected)
        #expect(try decodeBox(SampleToChunkBox.self, from: expected) == stsc)
    }

    @Test("stsz with one shared size has no table")
    func sampleSizesUniform() throws {
        let stsz = SampleSizeBox(sizes: Array(repeating: 160, count: 50))
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x14,  // size 20
            0x73, 0x74, 0x73, 0x7A,  // 'stsz'
            0x00, 0x00, 0x00, 0x00,  // version 0, flags 0
            0x00, 0x00, 0x00, 0xA0,  // sample_size 160 (all samples)
            0x00, 0x00, 0x00, 0x32,  // sample_count 50
        ]
        #expect(stsz.encoded() == expected)
        #expect(try decodeBox(SampleSizeBox.self, from: expected) == stsz)
    }

    @Test("stsz with differing sizes lists each one")
    func sampleSizesPerSample() throws {
        let stsz = SampleSizeBox(sizes: [100, 200, 300])
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x20,  // size 32
            0x73, 0x74, 0x73, 0x7A,  // 'stsz'
            0x00, 0x00, 0x00, 0x00,  // version 0, flags 0
            0x00, 0x00, 0x00, 0x00,  // sample_size 0: table follows
            0x00, 0x00, 0x00, 0x03,  // sample_count 3
            0x00, 0x00, 0x00, 0x64,  // entry_size 100
            0x00, 0x00, 0x00, 0xC8,  // entry_size 200
            0x00, 0x00, 0x01, 0x2C,  // entry_size 300
        ]
        #expect(stsz.encoded() == expected)
        #expect(try decodeBox(SampleSizeBox.self, from: expected) == stsz)
    }

    @Test("stsz of samples all of size 0 is a table of zeros (sample_size 0 would mean a table follows)")
    func sampleSizesAllZero() throws {
        let stsz = SampleSizeBox(sizes: [0, 0])
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x1C,  // size 28
            0x73, 0x74, 0x73, 0x7A,  // 'stsz'
            0x00, 0x00, 0x00, 0x00,  // version 0, flags 0
            0x00, 0x00, 0x00, 0x00,  // sample_size 0: table follows
            0x00, 0x00, 0x00, 0x02,  // sample_count 2
            0x00, 0x00, 0x00, 0x00,  // entry_size 0
            0x00, 0x00, 0x00, 0x00,  // entry_size 0
        ]
        #expect(stsz.encoded() == expected)
        #expect(try decodeBox(SampleSizeBox.self, from: expected) == stsz)
    }

    /// Found by fuzzing: a shared size was expanded into one entry per sample, so a 20-byte box
    /// cost up to 80 MB and the reader's sums a minute per input.
    @Test("stsz with a shared size claiming 2^32 − 1 samples is held as a size and a count")
    func sampleSizesSharedHuge() throws {
        let bytes: [UInt8] = [
            0x00, 0x00, 0x00, 0x14,  // size 20
            0x73, 0x74, 0x73, 0x7A,  // 'stsz'
            0x00, 0x00, 0x00, 0x00,  // version 0, flags 0
            0x00, 0x00, 0x10, 0x00,  // sample_size 4096
            0xFF, 0xFF, 0xFF, 0xFF,  // sample_count 4,294,967,295
        ]
        let stsz = try decodeBox(SampleSizeBox.self, from: bytes)
        #expect(stsz.count == 4_294_967_295)
        #expect(stsz[4_294_967_294] == 4096)
        #expect(stsz.totalBytes == 4096 * 4_294_967_295)
        #expect(stsz.bytes(in: 10..<13) == 3 * 4096)
        #expect(stsz.encoded() == bytes)
        #expect(stsz == SampleSizeBox(sharedSize: 4096, count: 4_294_967_295))
        #expect(stsz != SampleSizeBox(sharedSize: 4096, count: 4_294_967_294))
    }

    @Test("a shared size and a table of that size are the same box")
    func sampleSizesStorageIsNotIdentity() throws {
        #expect(SampleSizeBox(sharedSize: 160, count: 3) == SampleSizeBox(sizes: [160, 160, 160]))
        #expect(SampleSizeBox(sizes: [160, 160, 160]) == SampleSizeBox(sharedSize: 160, count: 3))
        #expect(SampleSizeBox(sharedSize: 160, count: 3) != SampleSizeBox(sizes: [160, 160, 161]))
        #expect(SampleSizeBox(sharedSize: 160, count: 3).sizes == [160, 160, 160])
        #expect(SampleSizeBox(sharedSize: 0, count: 2).encoded() == SampleSizeBox(sizes: [0, 0]).encoded())
        #expect(SampleSizeBox(sizes: [100, 200, 300]).bytes(in: 1..<3) == 500)
    }

    @Test("stsz for an empty table")
    func sampleSizesEmpty() throws {
        let stsz = SampleSizeBox(sizes: [])
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x14,  // size 20
            0x73, 0x74, 0x73, 0x7A,  // 'stsz'
            0x00, 0x00, 0x00, 0x00,  // version 0, flags 0
            0x00, 0x00, 0x00, 0x00,  // sample_size 0
            0x00, 0x00, 0x00, 0x00,  // sample_count 0
        ]
        #expect(stsz.encoded() == expected)
        #expect(try decodeBox(SampleSizeBox.self, from: expected) == stsz)
    }

    @Test("stco while every offset fits 32 bits (UInt32.max included)")
    func chunkOffsets32() throws {
        let box = ChunkOffsetBox(offsets: [48, 4_294_967_295])
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x18,  // size 24
            0x73, 0x74, 0x63, 0x6F,  // 'stco'
            0x00, 0x00, 0x00, 0x00,  // version 0, flags 0
            0x00, 0x00, 0x00, 0x02,  // entry_count 2
            0x00, 0x00, 0x00, 0x30,  // chunk_offset 48
            0xFF, 0xFF, 0xFF, 0xFF,  // chunk_offset 4_294_967_295
        ]
        #expect(box.type == "stco")
        #expect(box.encoded() == expected)
        var reader = ByteReader(expected)
        var (header, payload) = try reader.nextBox()
        #expect(header.type == "stco")
        #expect(try ChunkOffsetBox(payload: &payload, is64Bit: false) == box)
    }

    @Test("co64 once an offset exceeds UInt32.max, even if it is not the last")
    func chunkOffsets64() throws {
        let box = ChunkOffsetBox(offsets: [48, 4_294_967_296, 100])
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x28,  // size 40
            0x63, 0x6F, 0x36, 0x34,  // 'co64'
            0x00, 0x00, 0x00, 0x00,  // version 0, flags 0
            0x00, 0x00, 0x00, 0x03,  // entry_count 3
            0x00, 0x00, 0x00, 0x00,  // chunk_offset 48 (64-bit)
            0x00, 0x00, 0x00, 0x30,
            0x00, 0x00, 0x00, 0x01,  // chunk_offset 4_294_967_296
            0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00,  // chunk_offset 100
            0x00, 0x00, 0x00, 0x64,
        ]
        #expect(box.type == "co64")
        #expect(box.encoded() == expected)
        var reader = ByteReader(expected)
        var (_, payload) = try reader.nextBox()
        #expect(try ChunkOffsetBox(payload: &payload, is64Bit: true) == box)
    }

    @Test("elst version 0 with an empty edit (media_time -1) before the media")
    func editListV0() throws {
        let elst = EditListBox(entries: [.init(segmentDuration: 3600, mediaTime: -1), .init(segmentDuration: 90000, mediaTime: 312)])
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x28,  // size 40
            0x65, 0x6C, 0x73, 0x74,  // 'elst'
            0x00, 0x00, 0x00, 0x00,  // version 0, flags 0
            0x00, 0x00, 0x00, 0x02,  // entry_count 2
            0x00, 0x00, 0x0E, 0x10,  // segment_duration 3600 (40 ms at 90 kHz)
            0xFF, 0xFF, 0xFF, 0xFF,  //   media_time -1: empty edit
            0x00, 0x01,              //   media_rate_integer 1
            0x00, 0x00,              //   media_rate_fraction 0
            0x00, 0x01, 0x5F, 0x90,  // segment_duration 90000
            0x00, 0x00, 0x01, 0x38,  //   media_time 312 (Opus pre-skip)
            0x00, 0x01,              //   media_rate_integer 1
            0x00, 0x00,              //   media_rate_fraction 0
        ]
        #expect(elst.encoded() == expected)
        #expect(try decodeBox(EditListBox.self, from: expected) == elst)

        let edts = EditBox(editList: elst)
        #expect(edts.encoded() == [
            0x00, 0x00, 0x00, 0x30,  // size 48
            0x65, 0x64, 0x74, 0x73,  // 'edts'
        ] + expected)
        #expect(try decodeBox(EditBox.self, from: edts.encoded()) == edts)
    }

    @Test("elst version 1 when a segment duration overflows 32 bits")
    func editListV1() throws {
        let elst = EditListBox(entries: [.init(segmentDuration: 4_294_968_530, mediaTime: 0)])
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x24,  // size 36
            0x65, 0x6C, 0x73, 0x74,  // 'elst'
            0x01, 0x00, 0x00, 0x00,  // version 1, flags 0
            0x00, 0x00, 0x00, 0x01,  // entry_count 1
            0x00, 0x00, 0x00, 0x01,  // segment_duration 4_294_968_530 (64-bit)
            0x00, 0x00, 0x04, 0xD2,
            0x00, 0x00, 0x00, 0x00,  // media_time 0 (64-bit)
            0x00, 0x00, 0x00, 0x00,
            0x00, 0x01,              // media_rate_integer 1
            0x00, 0x00,              // media_rate_fraction 0
        ]
        #expect(elst.encoded() == expected)
        #expect(try decodeBox(EditListBox.self, from: expected) == elst)
    }

    @Test("elst version 1 when a media time overflows Int32, in either direction")
    func editListV1MediaTime() throws {
        for mediaTime: Int64 in [Int64(Int32.max) + 1, Int64(Int32.min) - 1] {
            let elst = EditListBox(entries: [.init(segmentDuration: 1, mediaTime: mediaTime)])
            let bytes = try expectRoundTrip(elst)
            #expect(bytes[8] == 1, "version for media_time \(mediaTime)")
            #expect(bytes.count == 36)
        }
        // The limits themselves still fit version 0.
        let fits = EditListBox(entries: [.init(segmentDuration: 0xFFFF_FFFF, mediaTime: Int64(Int32.min))])
        #expect(fits.encoded()[8] == 0)
        #expect(fits.size == 28)
    }

    @Test("sgpd version 1 with one 'roll' entry of -4 packets")
    func rollGroupDescription() throws {
        let sgpd = RollGroupDescriptionBox(rollDistance: -4)
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x1A,  // size 26
            0x73, 0x67, 0x70, 0x64,  // 'sgpd'
            0x01, 0x00, 0x00, 0x00,  // version 1, flags 0
            0x72, 0x6F, 0x6C, 0x6C,  // grouping_type 'roll'
            0x00, 0x00, 0x00, 0x02,  // default_length 2
            0x00, 0x00, 0x00, 0x01,  // entry_count 1
            0xFF, 0xFC,              // roll_distance -4 (80 ms of 20 ms packets)
        ]
        #expect(sgpd.encoded() == expected)
        #expect(try decodeBox(RollGroupDescriptionBox.self, from: expected) == sgpd)

        var rap = expected
        rap.replaceSubrange(12..<16, with: ascii("rap "))
        expectParseError(.unsupported("sgpd grouping other than roll")) { _ = try decodeBox(RollGroupDescriptionBox.self, from: rap) }
    }

    @Test("sbgp maps the first packets outside the roll group and the rest into it")
    func sampleToGroup() throws {
        let sbgp = SampleToGroupBox(entries: [.init(sampleCount: 4, groupDescriptionIndex: 0), .init(sampleCount: 46, groupDescriptionIndex: 1)])
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x24,  // size 36
            0x73, 0x62, 0x67, 0x70,  // 'sbgp'
            0x00, 0x00, 0x00, 0x00,  // version 0, flags 0
            0x72, 0x6F, 0x6C, 0x6C,  // grouping_type 'roll'
            0x00, 0x00, 0x00, 0x02,  // entry_count 2
            0x00, 0x00, 0x00, 0x04,  // sample_count 4
            0x00, 0x00, 0x00, 0x00,  //   group_description_index 0 (no group)
            0x00, 0x00, 0x00, 0x2E,  // sample_count 46
            0x00, 0x00, 0x00, 0x01,  //   group_description_index 1 (the roll entry)
        ]
        #expect(sbgp.encoded() == expected)
        #expect(try decodeBox(SampleToGroupBox.self, from: expected) == sbgp)
    }

    @Test("Opus roll group from a track table: 20 ms packets give -4, 10 ms packets give -8")
    func opusRollGroupFromTable() throws {
        var table = TrackTable()
        table.appendChunk(offset: 100, decodeTimes: (0..<50).map { Int64($0) * 960 }, compositionOffsets: Array(repeating: 0, count: 50),
                          sizes: Array(repeating: 120, count: 50), sync: Array(repeating: true, count: 50), lastDuration: 960)
        let group = try #require(OpusCodec.rollGroup(table))
        #expect(group.description == RollGroupDescriptionBox(rollDistance: -4))
        #expect(group.mapping == SampleToGroupBox(entries: [.init(sampleCount: 4, groupDescriptionIndex: 0),
                                                            .init(sampleCount: 46, groupDescriptionIndex: 1)]))

        var short = TrackTable()
        short.appendChunk(offset: 100, decodeTimes: (0..<20).map { Int64($0) * 480 }, compositionOffsets: Array(repeating: 0, count: 20),
                          sizes: Array(repeating: 60, count: 20), sync: Array(repeating: true, count: 20), lastDuration: 480)
        #expect(OpusCodec.rollGroup(short)?.description.rollDistance == -8)

        // Not more packets than the roll distance: nothing to describe.
        var tiny = TrackTable()
        tiny.appendChunk(offset: 100, decodeTimes: [0, 960, 1920, 2880], compositionOffsets: [0, 0, 0, 0],
                         sizes: [1, 1, 1, 1], sync: [true, true, true, true], lastDuration: 960)
        #expect(OpusCodec.rollGroup(tiny) == nil)
    }
}

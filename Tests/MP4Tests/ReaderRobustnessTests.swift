@testable import MP4
import Testing

@Suite("ByteReader and box headers")
struct ByteReaderTests {
    @Test("big-endian fields, signed reinterpretation, sub-readers")
    func fields() throws {
        var r = ByteReader([
            0x12,                    // u8
            0x34, 0x56,              // u16 0x3456
            0x78, 0x9A, 0xBC,        // u24 0x789ABC
            0xFF, 0xFF, 0xFF, 0xFE,  // i32 -2
            0x80, 0x00,              // i16 -32768
            0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,  // u64
            0xAA, 0xBB, 0xCC,        // sub-reader over 2 bytes, then 1
        ])
        #expect(try r.u8() == 0x12)
        #expect(try r.u16() == 0x3456)
        #expect(try r.u24() == 0x78_9ABC)
        #expect(try r.i32() == -2)
        #expect(try r.i16() == -32768)
        #expect(try r.u64() == 0x0102_0304_0506_0708)
        var sub = try r.subReader(2, "sub")
        #expect(sub.remaining == 2)
        #expect(try sub.u16() == 0xAABB)
        #expect(sub.isAtEnd)
        expectParseError(.truncated(field: "past sub", needed: 1, available: 0)) { _ = try sub.u8("past sub") }
        #expect(r.position == 22)
        #expect(r.rest() == [0xCC])
        #expect(r.isAtEnd)
    }

    @Test("reads past the end throw truncated with the field name and counts")
    func truncation() throws {
        var r = ByteReader([0x01, 0x02, 0x03])
        expectParseError(.truncated(field: "sample_count", needed: 4, available: 3)) { _ = try r.u32("sample_count") }
        #expect(r.position == 0)  // a failed read consumes nothing
        expectParseError(.truncated(field: "bytes", needed: 5, available: 3)) { _ = try r.bytes(5) }
        expectParseError(.truncated(field: "reserved", needed: -1, available: 3)) { try r.skip(-1) }
        var range = ByteReader([0, 1, 2, 3, 4, 5], range: 2..<4)
        #expect(try range.u16() == 0x0203)
        expectParseError(.truncated(field: "u8", needed: 1, available: 0)) { _ = try range.u8() }
    }

    @Test("checkedCount refuses counts the remaining bytes cannot hold")
    func checkedCount() throws {
        let r = ByteReader(Array(repeating: 0, count: 24))
        #expect(try r.checkedCount(3, entrySize: 8, "entries") == 3)
        expectParseError(.implausibleCount(field: "entries", count: 4, available: 24)) { _ = try r.checkedCount(4, entrySize: 8, "entries") }
        expectParseError(.implausibleCount(field: "entries", count: Int(UInt32.max), available: 24)) {
            _ = try r.checkedCount(UInt32.max, entrySize: 1, "entries")
        }
    }

    @Test("box header: compact, size 0 (to end), size 1 (largesize)")
    func headers() throws {
        var compact = ByteReader(box("free", [1, 2, 3]) + [0xEE])
        let (h1, p1) = try compact.nextBox()
        #expect(h1 == BoxHeader(type: "free", offset: 0, headerSize: 8, size: 11))
        #expect(p1.remaining == 3)
        #expect(h1.payloadRange == 8..<11)
        #expect(compact.remaining == 1)

        let toEnd: [UInt8] = [
            0x00, 0x00, 0x00, 0x00,  // size 0: the box extends to the end of the enclosing data
            0x6D, 0x64, 0x61, 0x74,  // 'mdat'
            0x01, 0x02, 0x03, 0x04, 0x05,
        ]
        var r0 = ByteReader(toEnd)
        let (h0, p0) = try r0.nextBox()
        #expect(h0 == BoxHeader(type: "mdat", offset: 0, headerSize: 8, size: 13))
        #expect(p0.remaining == 5)
        #expect(r0.isAtEnd)

        let large: [UInt8] = [
            0x00, 0x00, 0x00, 0x01,  // size 1: largesize follows
            0x6D, 0x64, 0x61, 0x74,  // 'mdat'
            0x00, 0x00, 0x00, 0x00,  // largesize 19
            0x00, 0x00, 0x00, 0x13,
            0xA1, 0xA2, 0xA3,        // 3 payload bytes
            0x00, 0x00, 0x00, 0x08, 0x66, 0x72, 0x65, 0x65,  // next box: empty 'free'
        ]
        var r1 = ByteReader(large)
        let (hl, pl) = try r1.nextBox()
        #expect(hl == BoxHeader(type: "mdat", offset: 0, headerSize: 16, size: 19))
        var payload = pl
        #expect(payload.rest() == [0xA1, 0xA2, 0xA3])
        let (next, _) = try r1.nextBox()
        #expect(next == BoxHeader(type: "free", offset: 19, headerSize: 8, size: 8))
    }

    @Test("impossible box sizes throw badBoxSize with type, size and offset")
    func badSizes() {
        // Declares 100 bytes, 12 present.
        var tooBig = ByteReader([0x00, 0x00, 0x00, 0x64] + ascii("moov") + [0, 0, 0, 0])
        expectParseError(.badBoxSize(type: "moov", size: 100, offset: 0)) { _ = try tooBig.nextBox() }
        // Size 7 is smaller than its own header.
        var tooSmall = ByteReader([0x00, 0x00, 0x00, 0x07] + ascii("free") + [0])
        expectParseError(.badBoxSize(type: "free", size: 7, offset: 0)) { _ = try tooSmall.nextBox() }
        // largesize 15 < 16-byte header.
        var smallLarge = ByteReader([0, 0, 0, 1] + ascii("mdat") + [0, 0, 0, 0, 0, 0, 0, 0x0F])
        expectParseError(.badBoxSize(type: "mdat", size: 15, offset: 0)) { _ = try smallLarge.nextBox() }
        // largesize near 2^64 must not overflow.
        var hugeLarge = ByteReader([0, 0, 0, 1] + ascii("mdat") + [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
        expectParseError(.badBoxSize(type: "mdat", size: UInt64.max, offset: 0)) { _ = try hugeLarge.nextBox() }
        // The offset is the box's position in the buffer, also for a nested child.
        let nested = box("moov", box("mvhd", []) + [0x00, 0x00, 0x01, 0x00] + ascii("trak"))
        var outer = ByteReader(nested)
        var (_, moovPayload) = try! outer.nextBox()
        expectParseError(.badBoxSize(type: "trak", size: 256, offset: 16)) { _ = try moovPayload.childBoxes() }
    }

    @Test("cut headers are truncated")
    func cutHeaders() {
        var r = ByteReader([0x00, 0x00, 0x00])
        expectParseError(.truncated(field: "box size", needed: 4, available: 3)) { _ = try r.nextBox() }
        var noType = ByteReader([0x00, 0x00, 0x00, 0x08, 0x66, 0x72])
        expectParseError(.truncated(field: "box type", needed: 4, available: 2)) { _ = try noType.nextBox() }
        var noLarge = ByteReader([0x00, 0x00, 0x00, 0x01, 0x6D, 0x64, 0x61, 0x74, 0x00, 0x00, 0x00, 0x00])
        expectParseError(.truncated(field: "box largesize", needed: 4, available: 0)) { _ = try noLarge.nextBox() }
    }
}

@Suite("Decoder robustness")
struct DecoderRobustnessTests {
    /// Decodes only the payload `bytes` as `B` (no header).
    func decodePayload<B: DecodableBox>(_: B.Type, _ bytes: [UInt8]) throws(MP4ParseError) -> B {
        var r = ByteReader(bytes)
        return try B(payload: &r)
    }

    @Test("truncated fixed-layout payloads name the field that was cut")
    func truncatedFixedFields() {
        let mvhd = Array(MovieHeaderBox(creationTime: 1, timescale: 1000, duration: 1, nextTrackID: 2).encoded()[8...])
        // 4 version/flags + 16 times + 16 rate/volume/reserved; then the matrix: 3 values fit in 50 bytes.
        expectParseError(.truncated(field: "matrix", needed: 4, available: 2)) { _ = try decodePayload(MovieHeaderBox.self, Array(mvhd.prefix(50))) }
        expectParseError(.truncated(field: "next_track_ID", needed: 4, available: 3)) { _ = try decodePayload(MovieHeaderBox.self, Array(mvhd.prefix(99))) }
        let tkhd = Array(Fixtures.videoTrak.header.encoded()[8...])
        expectParseError(.truncated(field: "height", needed: 4, available: 0)) { _ = try decodePayload(TrackHeaderBox.self, Array(tkhd.prefix(80))) }
        let mdhd = Array(MediaHeaderBox(creationTime: 0, timescale: 90000, duration: 9).encoded()[8...])
        expectParseError(.truncated(field: "language", needed: 2, available: 1)) { _ = try decodePayload(MediaHeaderBox.self, Array(mdhd.prefix(21))) }
        expectParseError(.truncated(field: "version", needed: 1, available: 0)) { _ = try decodePayload(TrackFragmentDecodeTimeBox.self, []) }
        expectParseError(.truncated(field: "baseMediaDecodeTime", needed: 4, available: 3)) {
            _ = try decodePayload(TrackFragmentDecodeTimeBox.self, [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])
        }
        expectParseError(.truncated(field: "segment_index", needed: 4, available: 0)) {
            _ = try decodePayload(RecordingInfoBox.self, Array(Fixtures.recordingInfo.encoded()[8..<36]))
        }
        expectParseError(.truncated(field: "sequenceParameterSetNALUnit", needed: 26, available: 8)) {
            _ = try decodePayload(AVCConfigurationBox.self, Array(SampleEntryTests.avcC720p[8..<24]))
        }
    }

    @Test("every truncation of every leaf payload throws a structural error")
    func everyTruncation() {
        let boxes: [any DecodableBox] = RoundTripTests.leaves.filter {
            // Decoders that take whatever is left, by design: free space, brands, names, optional
            // children, and the optional avcC High-profile extension (absent in older files).
            !["ftyp", "free", "dinf", "hdlr", "udta", "mvex"].contains($0.box.type.description)
                && !["avcC high", "avcC 1080p", "dOps 5.1"].contains($0.name)
        }.map(\.box)
        var checked = 0
        for box in boxes {
            let payload = Array(box.encoded()[8...])
            for n in 0..<payload.count {
                checked += 1
                do {
                    try Self.decodeAny(box, Array(payload.prefix(n)))
                    Issue.record("\(box.type) decoded from \(n) of \(payload.count) payload bytes")
                } catch {
                    #expect(["truncated", "implausibleCount", "badBoxSize", "missingBox"].contains(error.kind), "\(box.type) cut at \(n): \(error)")
                }
            }
        }
        #expect(checked > 1_000)
    }

    /// Decodes `bytes` as a payload of the same type as `box`.
    static func decodeAny<B: DecodableBox>(_ box: B, _ bytes: [UInt8]) throws(MP4ParseError) {
        var r = ByteReader(bytes)
        _ = try B(payload: &r)
    }

    /// Expects `.implausibleCount` for `field` and `count`. `available` is not compared: it is
    /// off by the count field's own 4 bytes (see `countCheckUsesBytesAfterTheCount`).
    func expectImplausible(_ field: String, count: Int, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) {
        do {
            try body()
            Issue.record("expected implausibleCount(\(field), \(count)), nothing was thrown", sourceLocation: sourceLocation)
        } catch let MP4ParseError.implausibleCount(f, c, _) {
            #expect(f == field, sourceLocation: sourceLocation)
            #expect(c == count, sourceLocation: sourceLocation)
        } catch {
            Issue.record("expected implausibleCount(\(field), \(count)), got \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test("entry counts larger than the bytes left are implausible before anything is allocated")
    func implausibleCounts() {
        let fullBoxAndHugeCount: [UInt8] = [0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02]
        expectImplausible("stts entries", count: 0xFFFF_FFFF) {
            _ = try decodePayload(TimeToSampleBox.self, fullBoxAndHugeCount)
        }
        expectImplausible("ctts entries", count: 0xFFFF_FFFF) {
            _ = try decodePayload(CompositionOffsetBox.self, fullBoxAndHugeCount)
        }
        expectImplausible("stss entries", count: 0xFFFF_FFFF) {
            _ = try decodePayload(SyncSampleBox.self, fullBoxAndHugeCount)
        }
        expectImplausible("stsc entries", count: 0xFFFF_FFFF) {
            _ = try decodePayload(SampleToChunkBox.self, fullBoxAndHugeCount)
        }
        expectImplausible("elst entries", count: 0xFFFF_FFFF) {
            _ = try decodePayload(EditListBox.self, fullBoxAndHugeCount)
        }
        expectImplausible("stsd entries", count: 0xFFFF_FFFF) {
            _ = try decodePayload(SampleDescriptionBox.self, fullBoxAndHugeCount)
        }
        expectImplausible("chunk offsets", count: 0xFFFF_FFFF) {
            var r = ByteReader(fullBoxAndHugeCount)
            _ = try ChunkOffsetBox(payload: &r, is64Bit: true)
        }
        // 3 offsets need 24 bytes in co64 but only 12 in stco.
        let three: [UInt8] = [0, 0, 0, 0,  0, 0, 0, 3] + Array(repeating: 0, count: 12)
        expectImplausible("chunk offsets", count: 3) {
            var r = ByteReader(three)
            _ = try ChunkOffsetBox(payload: &r, is64Bit: true)
        }
        expectImplausible("sbgp entries", count: 0xFFFF_FFFF) {
            _ = try decodePayload(SampleToGroupBox.self, [0, 0, 0, 0] + ascii("roll") + [0xFF, 0xFF, 0xFF, 0xFF])
        }
        // stsz with a per-sample table: 4 bytes per entry.
        expectImplausible("stsz entries", count: 3) {
            _ = try decodePayload(SampleSizeBox.self, [0, 0, 0, 0,  0, 0, 0, 0,  0, 0, 0, 3,  0, 0, 0, 1,  0, 0, 0, 2])
        }
        // trun 0xF01: 16 bytes per sample; the data offset is still among the bytes left.
        expectImplausible("trun samples", count: 2) {
            _ = try decodePayload(TrackRunBox.self, [0x00, 0x00, 0x0F, 0x01,  0, 0, 0, 2] + Array(repeating: 0, count: 20))
        }
    }

    @Test("an entry count is checked against the bytes after the count field")
    func countCheckUsesBytesAfterTheCount() {
        let stss: [UInt8] = [
            0x00, 0x00, 0x00, 0x00,  // version 0, flags 0
            0x00, 0x00, 0x00, 0x03,  // entry_count 3
            0x00, 0x00, 0x00, 0x01,  // sample 1
            0x00, 0x00, 0x00, 0x02,  // sample 2 — and no third entry: 8 bytes for 3 × 4
        ]
        expectParseError(.implausibleCount(field: "stss entries", count: 3, available: 8)) { _ = try decodePayload(SyncSampleBox.self, stss) }
        let stts: [UInt8] = [0, 0, 0, 0,  0xFF, 0xFF, 0xFF, 0xFF,  0, 0, 0, 1,  0, 0, 0, 2]
        expectParseError(.implausibleCount(field: "stts entries", count: 0xFFFF_FFFF, available: 8)) { _ = try decodePayload(TimeToSampleBox.self, stts) }
    }

    // A shared-size stsz claiming billions of samples is no longer refused: it is held as a
    // size and a count (SampleTableBoxTests.sampleSizesSharedHuge).

    @Test("a trun without per-sample fields cannot claim billions of samples")
    func trunWithoutFieldsHugeCount() {
        let payload: [UInt8] = [
            0x00, 0x00, 0x00, 0x01,  // version 0, flags: data-offset only (durations/sizes from defaults)
            0xFF, 0xFF, 0xFF, 0xFF,  // sample_count 4_294_967_295
            0x00, 0x00, 0x00, 0x10,  // data_offset 16
        ]
        do {
            _ = try decodePayload(TrackRunBox.self, payload)
            Issue.record("decoded 4 billion samples from 12 bytes")
        } catch {
            #expect(error.kind == "implausibleCount")
        }
    }

    @Test("missing mandatory children are named")
    func missingChildren() throws {
        expectParseError(.missingBox("mvhd", in: "moov")) { _ = try decodePayload(MovieBox.self, Fixtures.videoTrak.encoded()) }
        expectParseError(.missingBox("tkhd", in: "trak")) { _ = try decodePayload(TrackBox.self, Fixtures.videoMedia.encoded()) }
        expectParseError(.missingBox("mdia", in: "trak")) { _ = try decodePayload(TrackBox.self, Fixtures.videoTrak.header.encoded()) }
        expectParseError(.missingBox("elst", in: "edts")) { _ = try decodePayload(EditBox.self, []) }
        expectParseError(.missingBox("mfhd", in: "moof")) { _ = try decodePayload(MovieFragmentBox.self, []) }
        expectParseError(.missingBox("tfdt", in: "traf")) { _ = try decodePayload(TrackFragmentBox.self, TrackFragmentHeaderBox(trackID: 1).encoded()) }

        // stbl without stco/co64.
        var stbl = Fixtures.videoSampleTable
        stbl.chunkOffsets = ChunkOffsetBox(offsets: [])
        let children = Array(stbl.encoded()[8...])
        let withoutOffsets = Array(children.prefix(children.count - stbl.chunkOffsets.size))
        expectParseError(.missingBox("stco", in: "stbl")) { _ = try decodePayload(SampleTableBox.self, withoutOffsets) }
    }

    @Test("unknown children are skipped; an sgpd without sbgp is not a roll group")
    func unknownChildren() throws {
        let moov = Fixtures.finalMovie
        let payload = Array(moov.encoded()[8...])
        let tool: [UInt8] = [
            0x00, 0x00, 0x00, 0x0E,  // size 14
            0xA9, 0x74, 0x6F, 0x6F,  // '©too' (QuickTime metadata key)
        ] + Array("ffmpeg".utf8)
        let extra = box("meta", [0, 0, 0, 0]) + payload + tool
        #expect(try decodePayload(MovieBox.self, extra) == moov)

        var stbl = Fixtures.audioSampleTable
        let roll = stbl.rollGroup!
        stbl.rollGroup = nil
        let onlySgpd = Array(stbl.encoded()[8...]) + roll.description.encoded()
        #expect(try decodePayload(SampleTableBox.self, onlySgpd).rollGroup == nil)
    }

    @Test("dOps with a channel mapping table shorter than 2 + OutputChannelCount is refused")
    func dOpsShortMappingTable() {
        let payload: [UInt8] = [
            0x00,                    // Version 0
            0x06,                    // OutputChannelCount 6
            0x01, 0x38,              // PreSkip 312
            0x00, 0x00, 0xBB, 0x80,  // InputSampleRate 48000
            0x00, 0x00,              // OutputGain 0
            0x01,                    // ChannelMappingFamily 1: needs StreamCount, CoupledCount, 6 mapping bytes
            0x04, 0x02, 0x00,        // only 3 of those 8 bytes
        ]
        #expect(throws: MP4ParseError.self) { _ = try decodePayload(OpusSpecificBox.self, payload) }
    }
}

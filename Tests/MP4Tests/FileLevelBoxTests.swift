@testable import MP4
import Testing

/// `ftyp`, the `free` placeholder and `mdat` headers: the top-level boxes whose exact bytes the
/// in-place finalize depends on (ISO/IEC 14496-12 §4.2, §4.3, §8.1.1, §8.1.2).
@Suite("File-level boxes: ftyp, free, mdat")
struct FileLevelBoxTests {
    @Test("ftyp while recording: iso5 with iso6/avc1/mp41")
    func fileTypeFragmented() throws {
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x20,  // size 32
            0x66, 0x74, 0x79, 0x70,  // 'ftyp'
            0x69, 0x73, 0x6F, 0x35,  // major_brand 'iso5'
            0x00, 0x00, 0x02, 0x00,  // minor_version 512
            0x69, 0x73, 0x6F, 0x35,  // compatible 'iso5'
            0x69, 0x73, 0x6F, 0x36,  // compatible 'iso6'
            0x61, 0x76, 0x63, 0x31,  // compatible 'avc1'
            0x6D, 0x70, 0x34, 0x31,  // compatible 'mp41'
        ]
        #expect(FileTypeBox.fragmented.encoded() == expected)
        #expect(try decodeBox(FileTypeBox.self, from: expected) == .fragmented)
    }

    @Test("ftyp once finalized: isom with iso2/avc1/mp41")
    func fileTypeProgressive() throws {
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x20,  // size 32
            0x66, 0x74, 0x79, 0x70,  // 'ftyp'
            0x69, 0x73, 0x6F, 0x6D,  // major_brand 'isom'
            0x00, 0x00, 0x02, 0x00,  // minor_version 512
            0x69, 0x73, 0x6F, 0x6D,  // compatible 'isom'
            0x69, 0x73, 0x6F, 0x32,  // compatible 'iso2'
            0x61, 0x76, 0x63, 0x31,  // compatible 'avc1'
            0x6D, 0x70, 0x34, 0x31,  // compatible 'mp41'
        ]
        #expect(FileTypeBox.progressive.encoded() == expected)
        #expect(try decodeBox(FileTypeBox.self, from: expected) == .progressive)
    }

    @Test("fragmented and progressive ftyp have the same size, so finalize rewrites it in place")
    func fileTypeSizesMatch() {
        #expect(FileTypeBox.fragmented.size == 32)
        #expect(FileTypeBox.progressive.size == FileTypeBox.fragmented.size)
        #expect(SegmentWriter.placeholderOffset == 32)
    }

    @Test("ftyp decoding ignores a trailing partial brand")
    func fileTypeTrailingBytes() throws {
        let bytes: [UInt8] = [
            0x00, 0x00, 0x00, 0x16,  // size 22
            0x66, 0x74, 0x79, 0x70,  // 'ftyp'
            0x6D, 0x70, 0x34, 0x32,  // major_brand 'mp42'
            0x00, 0x00, 0x00, 0x01,  // minor_version 1
            0x6D, 0x70, 0x34, 0x32,  // compatible 'mp42'
            0xAA, 0xBB,              // 2 stray bytes: not a brand
        ]
        var reader = ByteReader(bytes)
        var (_, payload) = try reader.nextBox()
        let ftyp = try FileTypeBox(payload: &payload)
        #expect(ftyp == FileTypeBox(majorBrand: "mp42", minorVersion: 1, compatibleBrands: ["mp42"]))
    }

    @Test("free placeholder after ftyp is exactly 16 bytes of zeros")
    func freePlaceholder() throws {
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x10,  // size 16
            0x66, 0x72, 0x65, 0x65,  // 'free'
            0x00, 0x00, 0x00, 0x00,  // 8 bytes of free space, to become
            0x00, 0x00, 0x00, 0x00,  //   the 64-bit largesize of the final mdat
        ]
        #expect(SegmentWriter.placeholder.encoded() == expected)
        #expect(try decodeBox(FreeSpaceBox.self, from: expected) == FreeSpaceBox(length: 8))
        // The placeholder must be exactly as long as the forced-large mdat header that replaces it.
        #expect(MediaDataHeader(payloadSize: 123, forceLarge: true).encoded().count == SegmentWriter.placeholder.size)
    }

    @Test("mdat header, compact 8-byte form")
    func mediaDataCompact() {
        let header = MediaDataHeader(payloadSize: 1000)
        let expected: [UInt8] = [
            0x00, 0x00, 0x03, 0xF0,  // size 1008 = 8 + 1000
            0x6D, 0x64, 0x61, 0x74,  // 'mdat'
        ]
        #expect(header.headerSize == 8)
        #expect(header.encoded() == expected)
    }

    @Test("mdat header, forced 16-byte largesize form")
    func mediaDataForcedLarge() {
        let header = MediaDataHeader(payloadSize: 1000, forceLarge: true)
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x01,  // size 1: largesize follows
            0x6D, 0x64, 0x61, 0x74,  // 'mdat'
            0x00, 0x00, 0x00, 0x00,  // largesize high word
            0x00, 0x00, 0x03, 0xF8,  // largesize 1016 = 16 + 1000
        ]
        #expect(header.headerSize == 16)
        #expect(header.encoded() == expected)
    }

    @Test("mdat payload over 4 GiB uses largesize without being forced")
    func mediaDataOver4GiB() {
        let header = MediaDataHeader(payloadSize: 5_000_000_000)
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x01,  // size 1: largesize follows
            0x6D, 0x64, 0x61, 0x74,  // 'mdat'
            0x00, 0x00, 0x00, 0x01,  // largesize 5_000_000_016 = 0x1_2A05_F210
            0x2A, 0x05, 0xF2, 0x10,
        ]
        #expect(header.headerSize == 16)
        #expect(header.encoded() == expected)
    }

    @Test("mdat size exactly UInt32.max still fits the compact form; one more byte does not")
    func mediaDataBoundary() {
        let largestCompact = MediaDataHeader(payloadSize: 0xFFFF_FFF7)
        #expect(largestCompact.encoded() == [
            0xFF, 0xFF, 0xFF, 0xFF,  // size 4_294_967_295 = 8 + 0xFFFF_FFF7
            0x6D, 0x64, 0x61, 0x74,  // 'mdat'
        ])
        let firstLarge = MediaDataHeader(payloadSize: 0xFFFF_FFF8)
        #expect(firstLarge.encoded() == [
            0x00, 0x00, 0x00, 0x01,  // size 1: largesize follows
            0x6D, 0x64, 0x61, 0x74,  // 'mdat'
            0x00, 0x00, 0x00, 0x01,  // largesize 0x1_0000_0008 = 16 + 0xFFFF_FFF8
            0x00, 0x00, 0x00, 0x08,
        ])
    }

    @Test("a box whose payload exceeds 32 bits declares a 64-bit size (8 extra header bytes)")
    func genericBoxLargesize() {
        // Encoding 4 GiB is not practical; the size rule is what containers and offsets rely on.
        #expect(FreeSpaceBox(length: Int(UInt32.max) - 8).size == Int(UInt32.max))
        #expect(FreeSpaceBox(length: Int(UInt32.max) - 7).size == Int(UInt32.max) + 1 + 8)
    }
}

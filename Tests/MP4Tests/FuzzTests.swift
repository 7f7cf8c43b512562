import Shared
@testable import MP4
import Testing

/// Deterministic mutation fuzzing of the box decoders: valid `moov`/`moof` bytes are mutated
/// (bit flips, byte values, size fields, truncation, insertion, deletion) and decoded. Decoding
/// must either succeed with a self-consistent value or throw `MP4ParseError`; a trap, a hang or
/// a giant allocation fails the run.
@Suite("Fuzzing the box decoders")
struct FuzzTests {
    enum Kind: Sendable { case movie, fragment }

    struct Seed: Sendable {
        let name: String
        let kind: Kind
        let bytes: [UInt8]
        /// Offsets of box headers inside `bytes` (size fields worth mutating).
        let headerOffsets: [Int]
    }

    /// Walks the box tree to find every header: containers are descended into.
    static func headerOffsets(_ bytes: [UInt8]) -> [Int] {
        let containers: Set<String> = ["moov", "trak", "mdia", "minf", "stbl", "edts", "mvex", "udta", "moof", "traf", "dinf"]
        var out: [Int] = []
        func walk(_ range: Range<Int>) {
            var p = range.lowerBound
            while p + 8 <= range.upperBound {
                let size = Int(bytes[p]) << 24 | Int(bytes[p + 1]) << 16 | Int(bytes[p + 2]) << 8 | Int(bytes[p + 3])
                guard size >= 8, p + size <= range.upperBound else { return }
                out.append(p)
                let type = String(decoding: bytes[p + 4..<p + 8], as: UTF8.self)
                if containers.contains(type) { walk(p + 8..<p + size) }
                if type == "stsd" { walk(p + 16..<p + size) }  // sample entries after version/flags + count
                if type == "avc1" { walk(p + 86..<p + size) }
                if type == "Opus" { walk(p + 36..<p + size) }
                p += size
            }
        }
        walk(0..<bytes.count)
        return out
    }

    static func seeds() throws -> [Seed] {
        let items: [(String, Kind, [UInt8])] = [
            ("final moov", .movie, Fixtures.finalMovie.encoded()),
            ("init moov", .movie, try Fixtures.initMovie().encoded()),
            ("moof", .fragment, Fixtures.fragment.encoded()),
        ]
        return items.map { Seed(name: $0.0, kind: $0.1, bytes: $0.2, headerOffsets: headerOffsets($0.2)) }
    }

    /// Decodes a top-level box of the seed's kind (whatever type the mutated header claims).
    static func decode(_ bytes: [UInt8], as kind: Kind) throws(MP4ParseError) -> any MP4Box {
        var reader = ByteReader(bytes)
        var (_, payload) = try reader.nextBox()
        switch kind {
        case .movie: return try MovieBox(payload: &payload)
        case .fragment: return try MovieFragmentBox(payload: &payload)
        }
    }

    static let interesting: [UInt32] = [0, 1, 2, 7, 8, 9, 15, 16, 0x7F, 0x80, 0xFF, 0x100, 0xFFFF, 0x1_0000,
                                        0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFF8, 0xFFFF_FFFF]

    static func mutate(_ seed: Seed, using rng: inout SplitMix64) -> [UInt8] {
        var b = seed.bytes
        func put32(_ v: UInt32, at p: Int) {
            guard p >= 0, p + 4 <= b.count else { return }
            b[p] = UInt8(v >> 24); b[p + 1] = UInt8(truncatingIfNeeded: v >> 16)
            b[p + 2] = UInt8(truncatingIfNeeded: v >> 8); b[p + 3] = UInt8(truncatingIfNeeded: v)
        }
        for _ in 0..<Int.random(in: 1...3, using: &rng) {
            guard !b.isEmpty else { break }
            switch Int.random(in: 0..<9, using: &rng) {
            case 0:  // flip one bit
                b[Int.random(in: 0..<b.count, using: &rng)] ^= 1 << UInt8.random(in: 0...7, using: &rng)
            case 1:  // random byte value
                b[Int.random(in: 0..<b.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
            case 2:  // interesting 32-bit value anywhere (counts, flags, versions)
                put32(interesting.randomElement(using: &rng)!, at: Int.random(in: 0..<b.count, using: &rng))
            case 3, 4:  // a box's size field: small, large, off by a little
                let header = seed.headerOffsets.randomElement(using: &rng)!
                guard header + 4 <= b.count else { break }
                let old = UInt32(b[header]) << 24 | UInt32(b[header + 1]) << 16 | UInt32(b[header + 2]) << 8 | UInt32(b[header + 3])
                let candidates: [UInt32] = [0, 1, 7, 8, old &- 1, old &+ 1, old &+ 8, old &- 8, old &* 2,
                                            interesting.randomElement(using: &rng)!, UInt32.random(in: 0...UInt32.max, using: &rng)]
                put32(candidates.randomElement(using: &rng)!, at: header)
            case 5:  // a count or flags word right after a box header's version/flags
                let header = seed.headerOffsets.randomElement(using: &rng)!
                put32(interesting.randomElement(using: &rng)!, at: header + 8 + 4 * Int.random(in: 0...3, using: &rng))
            case 6:  // truncate
                b.removeLast(Int.random(in: 1...b.count, using: &rng))
            case 7:  // insert random bytes
                let at = Int.random(in: 0...b.count, using: &rng)
                b.insert(contentsOf: (0..<Int.random(in: 1...16, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }, at: at)
            default:  // delete a range
                let at = Int.random(in: 0..<b.count, using: &rng)
                b.removeSubrange(at..<min(b.count, at + Int.random(in: 1...16, using: &rng)))
            }
        }
        return b
    }

    /// A `trun` whose flags carry no per-sample field and whose sample_count is huge makes the
    /// decoder reserve count × 16 bytes (see `DecoderRobustnessTests.trunWithoutFieldsHugeCount`,
    /// disabled as a known bug). Such inputs are skipped, and counted, until that is fixed.
    static func hitsKnownTrunBug(_ b: [UInt8]) -> Bool {
        var p = 4
        while p + 12 <= b.count {
            if b[p] == 0x74, b[p + 1] == 0x72, b[p + 2] == 0x75, b[p + 3] == 0x6E {  // 'trun'
                let flags = UInt32(b[p + 5]) << 16 | UInt32(b[p + 6]) << 8 | UInt32(b[p + 7])
                let count = UInt32(b[p + 8]) << 24 | UInt32(b[p + 9]) << 16 | UInt32(b[p + 10]) << 8 | UInt32(b[p + 11])
                if flags & 0xF00 == 0, count > 1_000_000 { return true }
            }
            p += 1
        }
        return false
    }

    @Test("the unmutated seeds decode to what was encoded")
    func seedsAreValid() throws {
        let seeds = try Self.seeds()
        #expect(try Self.decode(seeds[0].bytes, as: .movie) as? MovieBox == Fixtures.finalMovie)
        #expect(try Self.decode(seeds[1].bytes, as: .movie) as? MovieBox == (try Fixtures.initMovie()))
        #expect(try Self.decode(seeds[2].bytes, as: .fragment) as? MovieFragmentBox == Fixtures.fragment)
        // The header walker sees every box, so size-field mutations can reach all of them.
        #expect(seeds[2].headerOffsets.count == 1 + 1 + 2 * 4)  // moof, mfhd, 2 × (traf, tfhd, tfdt, trun)
        #expect(seeds[2].headerOffsets.prefix(4) == [0, 8, 24, 32])  // moof, mfhd (16), traf, tfhd
        #expect(seeds[0].headerOffsets.prefix(2) == [0, 8])        // moov, mvhd
        // final moov: moov, mvhd, udta, mcrs + per track trak, tkhd, edts, elst, mdia, mdhd, hdlr,
        // minf, vmhd|smhd, dinf, dref, stbl, stsd, avc1|Opus, avcC|dOps, stts, stsc, stsz, stco|co64
        // (19), plus ctts + stss for video and sgpd + sbgp for audio.
        #expect(seeds[0].headerOffsets.count == 4 + 2 * 19 + 2 + 2)
    }

    @Test("20,000 mutations of moov/moof bytes: success or MP4ParseError, never a crash")
    func fuzzMoovAndMoof() throws {
        let seeds = try Self.seeds()
        var rng = SplitMix64(seed: 0x4D50_345F_4655_5A5A)  // "MP4_FUZZ"
        var outcomes: [String: Int] = [:]
        let iterations = 20_000
        for i in 0..<iterations {
            let seed = seeds[i % seeds.count]
            let bytes = Self.mutate(seed, using: &rng)
            if Self.hitsKnownTrunBug(bytes) {
                outcomes["skipped (known trun bug)", default: 0] += 1
                continue
            }
            do {
                let box = try Self.decode(bytes, as: seed.kind)
                // Whatever decoded must encode to exactly the size it declares.
                let encoded = box.encoded()
                #expect(encoded.count == box.size, "\(seed.name) iteration \(i)")
                outcomes["decoded", default: 0] += 1
            } catch {
                outcomes[error.kind, default: 0] += 1
            }
        }
        #expect(outcomes.values.reduce(0, +) == iterations)
        #expect(outcomes["skipped (known trun bug)", default: 0] < 20, "\(outcomes)")
        // The mutations reach every class of structural error, and many inputs still decode.
        #expect(outcomes["decoded", default: 0] > 1_000, "\(outcomes)")
        #expect(outcomes["truncated", default: 0] > 100, "\(outcomes)")
        #expect(outcomes["badBoxSize", default: 0] > 100, "\(outcomes)")
        #expect(outcomes["implausibleCount", default: 0] > 10, "\(outcomes)")
        #expect(outcomes["missingBox", default: 0] > 10, "\(outcomes)")
        #expect(outcomes["unsupported", default: 0] > 0, "\(outcomes)")
    }

    @Test("SplitMix64 matches the reference sequence")
    func rngReference() {
        var rng = SplitMix64(seed: 0)
        #expect(rng.next() == 0xE220_A839_7B1D_CDAF)
        #expect(rng.next() == 0x6E78_9E6A_A1B9_65F4)
    }
}

import Foundation
import MP4
import Testing

/// Replays the file-side fuzz target's seeds and every input in `ReaderCorpus/` (each one made
/// it fail once, named after the bug) through the same drive (Fuzz/SessionFuzz `ReaderFuzz`,
/// scripts/fuzz-reader.sh; docs/protocol.md §11.2): read, recover and resume any bytes as an
/// MP4 file without a trap and with every expectation holding.
// Serialized: the drive works in one memory-file directory, as the single-threaded fuzzer does.
@Suite("Reader fuzz corpus regression", .serialized)
struct ReaderCorpusTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("ReaderCorpus")

    @Test("the seeds are the three ways a recording is left, and each reads, recovers and resumes cleanly")
    func seeds() throws {
        let seeds = ReaderDrive.seeds()
        #expect(seeds.count == 3)
        for seed in seeds {
            #expect(Array(seed[4 ..< 8]) == Array("ftyp".utf8))
            #expect(ReaderDrive.run(seed).isEmpty)
        }
        #expect(MemoryFiles.paths(under: MemoryFiles.root + "reader").isEmpty, "the drive leaves no memory file behind")
    }

    @Test("every damaged byte of the unfinished seed's first 2 KiB is handled")
    func damagedSeed() throws {
        let unfinished = try #require(ReaderDrive.seeds().last)
        for offset in stride(from: 0, to: min(2048, unfinished.count), by: 7) {
            var damaged = unfinished
            damaged[offset] ^= 0xA5
            let violations = ReaderDrive.run(damaged)
            #expect(violations.isEmpty, "byte \(offset): \(violations)")
        }
    }

    @Test("every regression input is handled")
    func regressions() throws {
        let files = try FileManager.default.contentsOfDirectory(at: Self.corpus, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "mp4" }
        for file in files {
            let violations = ReaderDrive.run([UInt8](try Data(contentsOf: file)))
            #expect(violations.isEmpty, "\(file.lastPathComponent): \(violations)")
        }
    }
}

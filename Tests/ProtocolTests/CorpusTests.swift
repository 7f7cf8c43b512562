import Foundation
import NIOCore
import Testing
import WireProtocol

/// Replays every file in `Corpus/` (the fuzzing seeds, and any input that ever made the
/// fuzzer fail) through the same checks the fuzz target makes (protocol.md §11).
@Suite("Fuzz corpus regression")
struct CorpusTests {
    static func corpusFiles() throws -> [URL] {
        let dir = try #require(Bundle.module.url(forResource: "Corpus", withExtension: nil))
        return try FileManager.default.contentsOfDirectory(at: dir, includingPropertiesForKeys: nil)
            .filter { !$0.lastPathComponent.hasPrefix(".") }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    @Test("the corpus is present")
    func present() throws {
        #expect(try Self.corpusFiles().count >= Fixtures.all.count)
    }

    @Test("every corpus file parses identically whole and byte by byte, and valid frames re-encode exactly")
    func replay() throws {
        for file in try Self.corpusFiles() {
            let data = [UInt8](try Data(contentsOf: file))
            let whole = parse(data)
            let dripped = parse(data, chunks: Array(repeating: 1, count: data.count))
            #expect(dripped.messages == whole.messages, "\(file.lastPathComponent)")
            #expect(dripped.error?.code == whole.error?.code, "\(file.lastPathComponent)")

            // Re-encoding what was parsed gives back the bytes it came from.
            var reencoded: [UInt8] = []
            for message in whole.messages { reencoded += try encode(message) }
            #expect(Array(data.prefix(reencoded.count)) == reencoded, "\(file.lastPathComponent)")

            // The validator must not trap on any sequence of decoded messages.
            var validator = SessionValidator()
            for message in whole.messages {
                if case .resumeRequested = try? validator.validate(message) { validator.resumeRejected() }
            }
        }
    }
}

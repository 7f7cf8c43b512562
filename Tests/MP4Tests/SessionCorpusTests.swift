import Foundation
import MP4
import Testing

/// Replays every input in `Corpus/` (the session fuzzer's seeds, and every input that ever made
/// it fail, named after the bug) through the same drive the fuzz target runs
/// (Fuzz/SessionFuzz, scripts/fuzz-session.sh; docs/protocol.md §11), straight into the muxer:
/// no trap, and every expectation the drive checks holds.
@Suite("Session fuzz corpus regression")
struct SessionCorpusTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Corpus")

    static func corpusFiles() throws -> [URL] {
        try FileManager.default.contentsOfDirectory(at: corpus, includingPropertiesForKeys: nil)
            .filter { !$0.lastPathComponent.hasPrefix(".") }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    @Test("the corpus is present, with a regression input for each trap of issue 14")
    func present() throws {
        let names = try Self.corpusFiles().map(\.lastPathComponent)
        #expect(names.filter { $0.hasPrefix("regression-") }.count >= 3)
    }

    /// The inputs that trapped the server (issue 14, finding 1) or the muxer, as fuzz inputs.
    static let traps: [(file: String, samplesKept: Int)] = [
        ("regression-pts-dts-int64-min-plus-1s-TrackStatistics36.bin", 2),
        ("regression-dts-int64-min-plus-1s-pts-now-SegmentWriter157.bin", 2),
        ("regression-pts-int64-max-dts-int64-min-close-SegmentWriter205.bin", 0),
        // Found by the session fuzzer in the first version of the muxer's own bounds.
        ("regression-pts-minus-dts-overflow-MuxerTimestampBounds.bin", 0),
    ]

    @Test("each trap input is refused with timestampOutOfRange; the samples around it are recorded", arguments: 0..<traps.count)
    func trapInputs(_ index: Int) throws {
        let trap = Self.traps[index]
        let directory = NSTemporaryDirectory() + "session-corpus-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let script = SessionScript([UInt8](try Data(contentsOf: Self.corpus.appendingPathComponent(trap.file))))
        var gate = OpenGate()
        let outcome = SessionDrive.run(script, directory: directory, baseName: "r", gate: &gate)
        #expect(outcome.refusals == [.timestampOutOfRange])
        #expect(outcome.appended == trap.samplesKept)
        #expect(outcome.samplesInFiles == trap.samplesKept)
        #expect(outcome.violations.isEmpty)
    }

    @Test("every corpus input runs through the muxer, recovery and reader without a violation")
    func replay() throws {
        let directory = NSTemporaryDirectory() + "session-corpus-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var syncedWhenAsked = 0
        for file in try Self.corpusFiles() {
            let script = SessionScript([UInt8](try Data(contentsOf: file)))
            if script.syncWhenAsked { syncedWhenAsked += 1 }
            var gate = OpenGate()
            let outcome = SessionDrive.run(script, directory: directory, baseName: "r", gate: &gate)
            #expect(outcome.violations.isEmpty, "\(file.lastPathComponent): \(outcome.violations)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
        // The server's durability (fragments synced when asked) is among what the corpus drives.
        #expect(syncedWhenAsked >= 20, "\(syncedWhenAsked) corpus inputs run with fragments synced when asked")
    }

    /// The fuzzer runs on memory files (`MemoryFiles`); they must behave as the disk does, or
    /// what it finds (and misses) would not hold for real files.
    @Test("every corpus input has the same outcome on memory files as on disk")
    func memoryFilesBehaveAsTheDisk() throws {
        let directory = NSTemporaryDirectory() + "session-corpus-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var compared = 0
        for file in try Self.corpusFiles() {
            let script = SessionScript([UInt8](try Data(contentsOf: file)))
            var diskGate = OpenGate(), memoryGate = OpenGate()
            let disk = SessionDrive.run(script, directory: directory, baseName: "r", gate: &diskGate)
            let memory = SessionDrive.run(script, directory: MemoryFiles.root + "corpus", baseName: "r", gate: &memoryGate)
            #expect(memory.appended == disk.appended && memory.refusals == disk.refusals && memory.samplesInFiles == disk.samplesInFiles
                    && memory.recovered.count == disk.recovered.count && memory.violations.count == disk.violations.count,
                    "\(file.lastPathComponent): disk \(disk), memory \(memory)")
            #expect(MemoryFiles.paths(under: MemoryFiles.root + "corpus").isEmpty, "\(file.lastPathComponent) left files")
            compared += 1
        }
        #expect(compared > 0)
    }
}

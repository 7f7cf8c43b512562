import TestSupport
import Foundation
import Shared
import Testing

/// Scenario 7: a recording that never reached `finish()` (a crash), cut at various byte
/// offsets, then `MP4Recovery.recover` — judged by ffprobe/ffmpeg like any finished file.
@Suite("Crash recovery")
struct RecoveryTests {
    /// A crashed recording and where its fragments end in the file.
    struct Crashed {
        var recording: GeneratedRecording
        var snapshots: [FileSnapshot]
        /// File bytes at the last durable fragment.
        var bytes: Data
        /// `fragmentEnds[k]` = file size once fragment k+1 was complete.
        var fragmentEnds: [Int]
        var moovStart: Int
        var initEnd: Int
        var reports: [FragmentReport]
    }

    static func crash(directory: TemporaryDirectory) throws -> Crashed {
        let recording = try MediaGenerator.generate([
            .video(.init(id: 1, label: "front", frames: 150, keyframeInterval: 15)),
            .video(.init(id: 2, label: "back", frames: 150, keyframeInterval: 15)),
            .audio(.init(id: 3, label: "mic", packets: 250)),
        ])
        let outcome = try record(recording, directory: directory.path, snapshots: true, finish: false) {
            $0.durability = .fsyncEveryFragment
            $0.fragmentDuration = 500_000_000
        }
        defer {
            outcome.muxer.cancel()
            #expect(!FileManager.default.fileExists(atPath: outcome.path), "cancel() left \(outcome.path)")
        }
        let reports = outcome.fragmentReports
        try #require(reports.count >= 6, "only \(reports.count) fragments before the crash")
        #expect(reports.map(\.fragmentSequence) == (1...UInt32(reports.count)).map { $0 })
        let snapshots = outcome.snapshots
        let bytes = try #require(snapshots.last?.bytes)
        var ends: [Int] = []
        for (k, r) in reports.enumerated() {
            ends.append(k == 0 ? snapshots[0].bytes.count : ends[k - 1] + r.byteCount)
            #expect(snapshots[k].bytes.count == ends[k], "snapshot \(k) is \(snapshots[k].bytes.count) bytes, fragments end at \(ends[k])")
        }
        let ftypSize = Int(bytes[0]) << 24 | Int(bytes[1]) << 16 | Int(bytes[2]) << 8 | Int(bytes[3])
        let moovStart = ftypSize + 16
        #expect(String(decoding: bytes[moovStart + 4..<moovStart + 8], as: UTF8.self) == "moov", "init moov not after ftyp + placeholder")
        let initEnd = ends[0] - reports[0].byteCount
        #expect(moofOffset(bytes, fragmentStart: initEnd) != nil, "no moof at the start of fragment 1")
        return Crashed(recording: recording, snapshots: snapshots, bytes: bytes, fragmentEnds: ends, moovStart: moovStart,
                       initEnd: initEnd, reports: reports)
    }

    static func boxType(_ bytes: Data, at offset: Int) -> String {
        String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self)
    }

    /// A fragment is `moof`+`mdat`, possibly behind a `free` box (the muxer's sequence marker).
    static func moofOffset(_ bytes: Data, fragmentStart: Int) -> Int? {
        var offset = fragmentStart
        if boxType(bytes, at: offset) == "free" {
            offset += Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
        }
        return boxType(bytes, at: offset) == "moof" ? offset : nil
    }

    /// Writes the first `length` bytes of `bytes` as a crashed file.
    static func writeCut(_ bytes: Data, length: Int, to path: String) throws {
        try bytes.prefix(length).write(to: URL(fileURLWithPath: path))
    }

    /// Recovers `path` and checks it holds exactly the samples of the first `fragments`
    /// fragments: per track a prefix of the input, in total the reported sample counts.
    static func recoverAndCheck(_ crashed: Crashed, path: String, cut: Int, fragments: Int,
                                sourceLocation: SourceLocation = #_sourceLocation) throws {
        var progressCalls: [(UInt64, UInt64)] = []
        let report: MP4Recovery.Report
        do {
            report = try MP4Recovery.recover(path: path) { progressCalls.append(($0, $1)) }
        } catch {
            Issue.record("recovery of a cut at \(cut) failed: \(error)", sourceLocation: sourceLocation)
            return
        }
        let expectedSamples = crashed.reports.prefix(fragments).reduce(0) { $0 + $1.sampleCount }
        let end = fragments == 0 ? crashed.initEnd : crashed.fragmentEnds[fragments - 1]
        #expect(!report.alreadyFinalized, sourceLocation: sourceLocation)
        #expect(report.fragmentsRecovered == fragments, "cut \(cut): \(report.fragmentsRecovered) fragments recovered, expected \(fragments)",
                sourceLocation: sourceLocation)
        #expect(report.samplesRecovered == expectedSamples, "cut \(cut): \(report.samplesRecovered) samples, expected \(expectedSamples)",
                sourceLocation: sourceLocation)
        #expect(report.bytesDiscarded == UInt64(cut - end), "cut \(cut): \(report.bytesDiscarded) bytes discarded, expected \(cut - end)",
                sourceLocation: sourceLocation)
        let size = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.uint64Value
        #expect(report.fileSize == size, "report.fileSize \(report.fileSize), file is \(size ?? 0)", sourceLocation: sourceLocation)
        #expect(progressCalls.allSatisfy { $0.0 <= $0.1 }, "progress beyond total: \(progressCalls)", sourceLocation: sourceLocation)

        // Which samples made it: ask ffprobe for per-track packet counts, then require each to
        // be a prefix of that track's input and the total to match the fragment reports.
        let (probe, _) = try FFprobe.probe(path)
        var tracks: [ExpectedTrack] = []
        for track in crashed.recording.expected {
            let n = probe.stream(label: track.label).map { probe.packets(stream: $0.index).count } ?? 0
            tracks.append(track.slice(0..<min(n, track.samples.count)))
        }
        #expect(tracks.reduce(0) { $0 + $1.samples.count } == expectedSamples,
                "cut \(cut): recovered per-track counts \(tracks.map(\.samples.count)) do not add up to \(expectedSamples)",
                sourceLocation: sourceLocation)
        // Fragments are cut in decode order: nothing recovered may decode after something lost.
        let lastKept = tracks.flatMap(\.samples).map(\.dts).max() ?? .min
        let firstLost = crashed.recording.expected.enumerated().compactMap { t, track in
            track.samples.count > tracks[t].samples.count ? track.samples[tracks[t].samples.count].dts : nil
        }.min() ?? .max
        #expect(lastKept <= firstLost, "cut \(cut): a recovered sample decodes after a lost one", sourceLocation: sourceLocation)

        guard let checked = assertOracles(file: path, expected: tracks, sourceLocation: sourceLocation) else { return }
        for track in tracks where track.isVideo && !track.samples.isEmpty {
            assertFrameCounters(file: path, probe: checked, track: track, sourceLocation: sourceLocation)
        }
    }

    @Test("Truncated copies recover exactly the complete fragments before the cut")
    func truncatedCopies() throws {
        let dir = try TemporaryDirectory(prefix: "recover")
        let crashed = try Self.crash(directory: dir)
        let ends = crashed.fragmentEnds
        let cases: [(name: String, cut: Int, fragments: Int)] = [
            ("middle of fragment 3", (ends[1] + ends[2]) / 2, 2),
            ("exactly at the end of fragment 3", ends[2], 3),
            ("1 byte before fragment 4 ends", ends[3] - 1, 3),
            ("1 byte into fragment 5", ends[3] + 1, 4),
            ("inside the moof of fragment 2", (Self.moofOffset(crashed.bytes, fragmentStart: ends[0]) ?? ends[0]) + 20, 1),
            ("4 bytes into fragment 2", ends[0] + 4, 1),
            ("middle of fragment 2", ends[1] - crashed.reports[1].byteCount / 2, 1),
            ("1 byte before fragment 1 ends", ends[0] - 1, 0),
        ]
        for c in cases {
            let path = dir.file("cut-\(c.cut).mp4")
            try Self.writeCut(crashed.bytes, length: c.cut, to: path)
            if c.fragments == 0 {
                expectMuxerError(.noCompleteFragment, c.name) { () throws(MuxerError) in try MP4Recovery.recover(path: path) }
                continue
            }
            try Self.recoverAndCheck(crashed, path: path, cut: c.cut, fragments: c.fragments)
        }
    }

    @Test("A cut inside the init moov, or right after it, is noCompleteFragment")
    func cutInsideInitSegment() throws {
        let dir = try TemporaryDirectory(prefix: "recover-init")
        let crashed = try Self.crash(directory: dir)
        for (name, cut) in [("inside init moov", (crashed.moovStart + crashed.initEnd) / 2),
                            ("1 byte into init moov", crashed.moovStart + 1),
                            ("right after init moov", crashed.initEnd),
                            ("8 bytes into fragment 1", crashed.initEnd + 8)] {
            let path = dir.file("init-\(cut).mp4")
            try Self.writeCut(crashed.bytes, length: cut, to: path)
            let before = try Data(contentsOf: URL(fileURLWithPath: path))
            expectMuxerError(.noCompleteFragment, name) { () throws(MuxerError) in try MP4Recovery.recover(path: path) }
            let after = try Data(contentsOf: URL(fileURLWithPath: path))
            #expect(before == after, "\(name): a failed recovery modified the file")
        }
    }

    @Test("An un-truncated crashed file recovers everything written so far, at every fragment")
    func untruncated() throws {
        let dir = try TemporaryDirectory(prefix: "recover-full")
        let crashed = try Self.crash(directory: dir)
        for k in [1, crashed.snapshots.count / 2, crashed.snapshots.count] {
            let path = dir.file("crash-after-\(k).mp4")
            try crashed.snapshots[k - 1].bytes.write(to: URL(fileURLWithPath: path))
            try Self.recoverAndCheck(crashed, path: path, cut: crashed.snapshots[k - 1].bytes.count, fragments: k)
        }
    }

    @Test("Recovering an already finalized file reports alreadyFinalized and leaves it unchanged")
    func alreadyFinalized() throws {
        let dir = try TemporaryDirectory(prefix: "recover-final")
        let recording = try MediaGenerator.generate([
            .video(.init(id: 1, label: "front", frames: 60)),
            .audio(.init(id: 2, label: "mic", packets: 100)),
        ])
        for mode in [MuxerConfiguration.FinalizeMode.inPlace, .faststart] {
            let outcome = try record(recording, directory: dir.path, baseName: "final-\(mode)") { $0.finalizeMode = mode }
            let before = try Data(contentsOf: URL(fileURLWithPath: outcome.path))
            let report: MP4Recovery.Report
            do {
                report = try MP4Recovery.recover(path: outcome.path)
            } catch {
                Issue.record("\(mode): recover on a finalized file threw \(error)")
                continue
            }
            #expect(report.alreadyFinalized, "\(mode)")
            #expect(report.samplesRecovered == recording.samples.count, "\(mode): \(report.samplesRecovered) samples")
            #expect(report.bytesDiscarded == 0)
            #expect(report.fileSize == UInt64(before.count))
            let after = try Data(contentsOf: URL(fileURLWithPath: outcome.path))
            #expect(before == after, "\(mode): recover modified a finalized file")
            assertOracles(file: outcome.path, expected: recording.expected)
        }

        // A recovered file is finalized too: a second recovery is a no-op.
        let crashDir = try TemporaryDirectory(prefix: "recover-twice")
        let crashed = try Self.crash(directory: crashDir)
        let path = crashDir.file("twice.mp4")
        try crashed.bytes.write(to: URL(fileURLWithPath: path))
        let first = try MP4Recovery.recover(path: path)
        #expect(!first.alreadyFinalized)
        let recovered = try Data(contentsOf: URL(fileURLWithPath: path))
        let second = try MP4Recovery.recover(path: path)
        #expect(second.alreadyFinalized)
        #expect(second.samplesRecovered == first.samplesRecovered)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == recovered, "second recovery modified the file")
    }

    @Test("Files that are not ours are refused without being modified")
    func notOurFile() throws {
        let dir = try TemporaryDirectory(prefix: "recover-foreign")
        // An ffmpeg-written fragmented MP4: no placeholder, no mcrs box.
        let foreign = dir.file("ffmpeg-frag.mp4")
        let made = try runTool("ffmpeg", ["-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=30", "-t", "1",
                                          "-c:v", "libx264", "-preset", "ultrafast", "-movflags", "frag_keyframe+empty_moov", foreign])
        try #require(made.status == 0, "ffmpeg could not write a fragmented file: \(made.stderr)")
        let before = try Data(contentsOf: URL(fileURLWithPath: foreign))
        expectMuxerError(.notOurFile, "ffmpeg fragmented file") { () throws(MuxerError) in try MP4Recovery.recover(path: foreign) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: foreign)) == before)

        let junk = dir.file("junk.mp4")
        try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: junk))
        expectMuxerError(.notOurFile, "junk") { () throws(MuxerError) in try MP4Recovery.recover(path: junk) }

        expectMuxerError(.io, "missing file") { () throws(MuxerError) in try MP4Recovery.recover(path: dir.file("missing.mp4")) }
    }
}

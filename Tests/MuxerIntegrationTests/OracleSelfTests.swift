import TestSupport
import Foundation
import Shared
import Testing

/// The oracles must be able to fail: feed them a good file with wrong expectations.
@Suite("Oracle self-check")
struct OracleSelfTests {
    @Test("Shifted timestamps, a changed payload and a missing packet are all caught")
    func oraclesCanFail() throws {
        let dir = try TemporaryDirectory(prefix: "self")
        let recording = try MediaGenerator.generate([
            .video(.init(id: 1, label: "front", frames: 30)),
            .audio(.init(id: 2, label: "mic", packets: 50)),
        ])
        let outcome = try record(recording, directory: dir.path)
        assertOracles(file: outcome.path, expected: recording.expected)

        var shifted = recording.expected
        shifted[1].samples[10].pts += 2 * 20_833 // 2 ticks at 48 kHz
        withKnownIssue("a 2-tick audio shift must be caught") { assertOracles(file: outcome.path, expected: shifted) }

        var changed = recording.expected
        changed[0].samples[5].mp4Adler &+= 1
        withKnownIssue("a payload change must be caught") { assertOracles(file: outcome.path, expected: changed) }

        withKnownIssue("a missing packet must be caught") {
            assertOracles(file: outcome.path, expected: [recording.expected[0].slice(0..<29), recording.expected[1]])
        }
        withKnownIssue("a wrong label must be caught") {
            var relabeled = recording.expected
            relabeled[1].label = "microphone"
            assertOracles(file: outcome.path, expected: relabeled)
        }
        // ffmpeg's decode check is not vacuous either: a corrupted copy is reported.
        var bytes = try Data(contentsOf: URL(fileURLWithPath: outcome.path))
        let boxes = try topLevelBoxes(outcome.path)
        let mdat = try #require(boxes.first { $0.type == "mdat" })
        for i in stride(from: Int(mdat.offset) + 2000, to: Int(mdat.offset + mdat.size) - 100, by: 997) { bytes[i] ^= 0x5A }
        let corrupt = dir.file("corrupt.mp4")
        try bytes.write(to: URL(fileURLWithPath: corrupt))
        let decode = try ffmpegDecodeCheck(corrupt)
        #expect(!decode.stderr.isEmpty, "ffmpeg decoded a corrupted file silently")
    }
}

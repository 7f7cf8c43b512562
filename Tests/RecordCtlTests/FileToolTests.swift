import Foundation
import Shared
import Testing
import TestSupport

/// `verify`, `inspect` and `recover` on files made by the muxer (`recordctl demo`).
@Suite("recordctl file tools", .serialized)
struct FileToolTests {
    /// A finished 3-track recording written by the muxer through `recordctl demo`.
    static func demoRecording(in directory: String) throws -> String {
        let demo = try recordctl(["demo", "--seconds", "2", "--size", "160x120", "--output", directory])
        try #require(demo.status == 0, "\(demo.output)")
        let file = try #require(try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".mp4") }.first)
        return directory + "/" + file
    }

    @Test(.timeLimit(.minutes(2)))
    func verifyPassesAGoodFileAndFailsTruncatedAndCorruptedCopies() throws {
        let scratch = try TemporaryDirectory(prefix: "recordctl-files")
        let directory = scratch.path
        let good = try Self.demoRecording(in: directory)

        let ok = try recordctl(["verify", good])
        #expect(ok.status == 0, "\(ok.output)")
        #expect(ok.stdout.contains("OK"))
        for check in ["ftyp present", "exactly one complete moov", "no torn tail", "sample tables consistent"] {
            #expect(ok.stdout.contains(check), "\(ok.stdout)")
        }
        let okJSON = try recordctl(["verify", "--json", good])
        #expect(try okJSON.json()["ok"] as? Bool == true)

        let bytes = try Data(contentsOf: URL(fileURLWithPath: good))
        // Truncated: the second half is missing.
        let truncated = directory + "/truncated.mp4"
        try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: truncated))
        let t = try recordctl(["verify", truncated])
        #expect(t.status == 1)
        #expect(t.stdout.contains("FAILED — truncated file"), "\(t.stdout)")
        #expect(t.stdout.contains("truncated: the file ends inside a box"), "\(t.stdout)")
        // Truncated by a few bytes only (the end of the moov is missing).
        let shortened = directory + "/shortened.mp4"
        try bytes.prefix(bytes.count - 10).write(to: URL(fileURLWithPath: shortened))
        let s = try recordctl(["verify", shortened])
        #expect(s.status == 1)
        #expect(s.stdout.contains("truncated"), "\(s.stdout)")

        // Corrupted: the moov box's size field overwritten.
        let moov = try #require(Self.topLevelBox("moov", in: bytes)) + 4
        var corruptHeader = bytes
        corruptHeader.replaceSubrange((moov - 4)..<moov, with: [0, 0, 0, 5])
        let corrupted = directory + "/corrupted.mp4"
        try corruptHeader.write(to: URL(fileURLWithPath: corrupted))
        let c = try recordctl(["verify", corrupted])
        #expect(c.status == 1)
        #expect(c.stdout.contains("FAILED — corrupted file"), "\(c.stdout)")
        #expect(c.stdout.contains("box 'moov' with size 5 is not a valid box"), "\(c.stdout)")

        // Corrupted sample table: the first chunk offset of the first track points outside any mdat.
        let stco = try #require(Self.find("stco", in: bytes, from: moov))
        var corruptTable = bytes
        corruptTable.replaceSubrange((stco + 12)..<(stco + 16), with: [0, 0, 0, 0])
        let badTable = directory + "/bad-table.mp4"
        try corruptTable.write(to: URL(fileURLWithPath: badTable))
        let b = try recordctl(["verify", badTable])
        #expect(b.status == 1)
        #expect(b.stdout.contains("chunk 1 (bytes 0..<"), "\(b.stdout)")
        #expect(b.stdout.contains("is not inside an mdat"), "\(b.stdout)")

        // Not an MP4 at all, and a missing file.
        let text = directory + "/notes.txt"
        try "hello".write(toFile: text, atomically: true, encoding: .utf8)
        let n = try recordctl(["verify", text])
        #expect(n.status == 1)
        #expect(n.stdout.contains("not an MP4"), "\(n.stdout)")
        let missing = try recordctl(["verify", directory + "/missing.mp4"])
        #expect(missing.status == 1)
        #expect(missing.stdout.contains("cannot read"), "\(missing.output)")
    }

    @Test(.timeLimit(.minutes(2)))
    func inspectAgreesWithFFprobeOnAMuxerFile() throws {
        let scratch = try TemporaryDirectory(prefix: "recordctl-files")
        let directory = scratch.path
        let file = try Self.demoRecording(in: directory)
        try InspectAgreesWithFFprobe.check(file)
        let text = try recordctl(["inspect", file])
        #expect(text.status == 0)
        #expect(text.stdout.contains("160x120") && text.stdout.contains("h264") && text.stdout.contains("opus"), "\(text.stdout)")
        let recover = try recordctl(["recover", file])
        #expect(recover.status == 0)
        #expect(recover.stdout.contains("already a finalized MP4"))
        let missing = try recordctl(["inspect", directory + "/missing.mp4"])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("cannot inspect"))
    }

    /// Offset of a top-level box (its size field).
    static func topLevelBox(_ type: String, in data: Data) -> Int? {
        let bytes = [UInt8](data)
        var offset = 0
        while offset + 16 <= bytes.count {
            var size = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            if size == 1 { size = bytes[offset + 8..<offset + 16].reduce(0) { $0 << 8 | Int($1) } }
            if String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self) == type { return offset }
            guard size >= 8 else { return nil }
            offset += size
        }
        return nil
    }

    /// Offset of the type field of the first box of this type at or after `from`.
    static func find(_ type: String, in data: Data, from: Int) -> Int? {
        let needle = Array(type.utf8)
        return data.withUnsafeBytes { raw -> Int? in
            let bytes = raw.bindMemory(to: UInt8.self)
            guard bytes.count >= from + 4 else { return nil }
            for i in from..<(bytes.count - 4) where bytes[i] == needle[0] && bytes[i + 1] == needle[1] && bytes[i + 2] == needle[2] && bytes[i + 3] == needle[3] {
                return i
            }
            return nil
        }
    }

    @Test func recoverRefusesAFileOfADataDirectoryARunningServerHolds() throws {
        let scratch = try TemporaryDirectory(prefix: "recordctl-files")
        let directory = scratch.path
        let file = try Self.demoRecording(in: directory)
        // What a running record-server holds on its data directory (here, this process).
        let lock = try DataDirectoryLock(dataDirectory: directory)
        let refused = try recordctl(["recover", file])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("running record-server (pid \(getpid()))"), "\(refused.output)")
        lock.release()
        #expect(try recordctl(["recover", file]).status == 0, "with the server gone, recover works")
    }

    /// ffmpeg's fragmented MP4 leaves sample durations and flags out of its runs (they are
    /// the `tfhd` defaults); read without them every sample looked like a keyframe and the
    /// last fragment had no duration.
    @Test func inspectReadsAnotherMuxersFragmentedMP4LikeFFprobe() throws {
        let scratch = try TemporaryDirectory(prefix: "recordctl-files")
        let directory = scratch.path
        let file = directory + "/fragmented.mp4"
        let made = try tool("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25:duration=4",
                                                      "-c:v", "libx264", "-g", "25", "-movflags", "frag_keyframe+empty_moov", file])
        try #require(made.status == 0, "\(made.output)")
        let probe = try tool("ffprobe", ["-v", "error", "-select_streams", "v", "-show_entries", "packet=flags",
                                                        "-show_entries", "stream=duration", "-of", "csv=p=0", file])
        let lines = probe.stdout.split(separator: "\n").map(String.init)
        let keyframes = lines.filter { $0.hasPrefix("K") }.count
        let packets = lines.filter { $0.hasPrefix("K") || $0.hasPrefix("_") }.count
        let duration = try #require(lines.compactMap(Double.init).first)

        let inspection = try MP4Inspection.inspect(path: file)
        let video = try #require(inspection.tracks.first)
        #expect(video.sampleCount == packets)
        #expect(video.keyframeCount == keyframes, "ffprobe counts \(keyframes) keyframes")
        #expect(abs(video.durationSeconds - duration) < 0.001, "ffprobe says \(duration) s")
        #expect(inspection.layout == "fragmented", "another muxer's fragmented file is not a crashed recording of ours")
    }

    @Test func inspectRefusesAFileThatIsNotMP4() throws {
        let scratch = try TemporaryDirectory(prefix: "recordctl-files")
        let directory = scratch.path
        let matroska = directory + "/clip.mkv"
        let made = try tool("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc=size=64x48:rate=5:duration=1",
                                                      "-c:v", "libx264", matroska])
        try #require(made.status == 0, "\(made.output)")
        let result = try recordctl(["inspect", matroska])
        #expect(result.status == 1, "\(result.output)")
        #expect(result.stderr.contains("not an MP4 file"), "\(result.stderr)")
    }
}

import ArgumentParser
import Foundation
import Shared

/// `recordctl verify FILE`: a structural check of a finished MP4.
struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check the structure of an MP4 file and give a verdict (exit 0 when sound, 1 when not; works offline).")

    @Argument(help: "The MP4 file.") var file: String
    @Flag(help: "Print JSON instead of text.") var json = false

    func run() throws {
        let verdict = Self.verify(path: file)
        if json {
            print(JSONOutput.pretty(jsonObject: ["path": file, "ok": verdict.ok, "verdict": verdict.summary, "problems": verdict.problems,
                                     "checks": verdict.checks]))
        } else {
            print(verdict.text(path: file))
        }
        if !verdict.ok { throw ExitCode(1) }
    }

    struct Verdict {
        var summary = "ok"
        var problems: [String] = []
        var checks: [String] = []
        var ok: Bool { problems.isEmpty }

        func text(path: String) -> String {
            var out = "\(path): \(ok ? "OK" : "FAILED") — \(summary)"
            for check in checks { out += "\n  ✓ \(check)" }
            for problem in problems { out += "\n  ✗ \(problem)" }
            return out
        }
    }

    /// Whether a torn-tail reason means the file ends too early (truncated) rather than holding garbage.
    static func isTruncation(_ reason: String) -> Bool {
        reason.contains("remain") || reason.contains("cut ") || reason.contains("stray bytes") || reason.contains("without its")
    }

    static func verify(path: String) -> Verdict {
        var v = Verdict()
        let scan: MP4FileScanner.Result
        do { scan = try MP4FileScanner.scan(path: path) } catch {
            v.summary = "cannot read the file"
            v.problems.append("cannot read \(path): \(error.message)")
            return v
        }
        if scan.fileSize == 0 {
            v.summary = "empty file"
            v.problems.append("the file is empty")
            return v
        }
        func tornProblem() -> String? {
            guard let reason = scan.tornReason, let at = scan.tornAt else { return nil }
            if isTruncation(reason) {
                return "truncated: the file ends inside a box at byte \(at) of \(scan.fileSize) (\(reason))"
            }
            return "corrupted: invalid data at byte \(at) of \(scan.fileSize) (\(reason))"
        }
        if scan.boxes.isEmpty {
            v.summary = "not an MP4 file"
            v.problems.append("not an MP4: no readable box at the start of the file")
            return v
        }
        if scan.fileType == nil || scan.boxes.first?.type != FileTypeBox.boxType {
            v.problems.append("no ftyp box at the start")
        } else {
            v.checks.append("ftyp present")
        }
        guard let movie = scan.movie else {
            if let torn = tornProblem() {
                v.summary = torn.hasPrefix("truncated") ? "truncated file" : "corrupted file"
                v.problems.append(torn)
            }
            v.problems.append("no complete moov box: the file cannot be played")
            if v.summary == "ok" { v.summary = "no movie header" }
            return v
        }
        if scan.isFragmented {
            v.summary = "unfinished recording"
            v.problems.append("unfinished recording: the file is fragmented (\(scan.fragments.count) fragments); run `recordctl recover \(path)` to finalize it")
            if let torn = tornProblem() { v.problems.append(torn) }
            return v
        }
        let moovCount = scan.boxes.filter { $0.type == MovieBox.boxType }.count
        if scan.tornReason?.contains("second moov") == true || moovCount != 1 {
            v.problems.append("expected exactly one moov box, found \(max(moovCount, 2))")
        } else {
            v.checks.append("exactly one complete moov")
        }
        if let torn = tornProblem(), scan.tornReason?.contains("second moov") != true {
            v.summary = torn.hasPrefix("truncated") ? "truncated file" : "corrupted file"
            v.problems.append(torn)
        } else if scan.tornAt == nil {
            v.checks.append("no torn tail: every top-level box is complete")
        }
        let mdats = scan.boxes.filter { $0.type == "mdat" }.map { $0.offset..<($0.offset + $0.size) }
        if mdats.isEmpty { v.problems.append("no mdat box") }
        var trackProblems = 0
        for trak in movie.tracks {
            let problems = checkSampleTable(trak, mdats: mdats, fileSize: scan.fileSize)
            trackProblems += problems.count
            v.problems += problems
        }
        if trackProblems == 0 {
            v.checks.append("sample tables consistent in \(movie.tracks.count) track(s); every chunk inside an mdat")
        } else if v.summary == "ok" {
            v.summary = "corrupted sample tables"
        }
        if v.ok {
            v.summary = "a sound progressive MP4 with \(movie.tracks.count) track(s)"
        } else if v.summary == "ok" {
            v.summary = "structural problems"
        }
        return v
    }

    /// stts total = stsz count = samples of the stsc-expanded chunks; chunks inside an mdat and the file.
    static func checkSampleTable(_ trak: TrackBox, mdats: [Range<UInt64>], fileSize: UInt64) -> [String] {
        let id = trak.header.trackID
        let stbl = trak.media.information.sampleTable
        var problems: [String] = []
        let sizes = stbl.sampleSizes
        let sttsTotal = stbl.timeToSample.entries.reduce(UInt64(0)) { $0 + UInt64($1.count) }
        if sttsTotal != UInt64(sizes.count) {
            problems.append("corrupted: track \(id): stts describes \(sttsTotal) samples but stsz has \(sizes.count)")
        }
        let offsets = stbl.chunkOffsets.offsets
        let entries = stbl.sampleToChunk.entries
        var perChunk: [Int] = []
        perChunk.reserveCapacity(offsets.count)
        var entryProblem = false
        for (i, entry) in entries.enumerated() {
            let next = i + 1 < entries.count ? UInt64(entries[i + 1].firstChunk) : UInt64(offsets.count) + 1
            guard entry.firstChunk >= 1, UInt64(entry.firstChunk) < next, next <= UInt64(offsets.count) + 1,
                  i > 0 || entry.firstChunk == 1 else {
                problems.append("corrupted: track \(id): stsc entry \(i + 1) (first chunk \(entry.firstChunk)) does not fit \(offsets.count) chunks")
                entryProblem = true
                break
            }
            for _ in UInt64(entry.firstChunk)..<next { perChunk.append(Int(entry.samplesPerChunk)) }
        }
        if entryProblem { return problems }
        if entries.isEmpty && !offsets.isEmpty { problems.append("corrupted: track \(id): stco lists chunks but stsc is empty"); return problems }
        let chunkSamples = perChunk.reduce(0, +)
        if chunkSamples != sizes.count {
            problems.append("corrupted: track \(id): the chunks (stsc × stco) hold \(chunkSamples) samples but stsz has \(sizes.count)")
            return problems
        }
        var sample = 0
        for (chunk, count) in perChunk.enumerated() {
            let start = offsets[chunk]
            let length = sizes.bytes(in: sample..<(sample + count))
            sample += count
            // Offsets and sizes come from the file: a sum past 2^64 is past its end too.
            let (sum, overflow) = start.addingReportingOverflow(length)
            let end = overflow ? UInt64.max : sum
            if end > fileSize {
                problems.append("truncated: track \(id): chunk \(chunk + 1) ends at byte \(end), beyond the end of the file (\(fileSize) bytes)")
                break
            }
            if !mdats.contains(where: { $0.lowerBound + 8 <= start && end <= $0.upperBound }) {
                problems.append("corrupted: track \(id): chunk \(chunk + 1) (bytes \(start)..<\(end)) is not inside an mdat")
                break
            }
        }
        return problems
    }
}

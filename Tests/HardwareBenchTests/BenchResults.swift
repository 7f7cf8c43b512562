import Foundation
import TestSupport

/// What `scripts/hardware-test.sh` left in its results directory for one scenario: the
/// recording, both logs, capture-agent's exit status and the scenario's facts
/// (`scripts/hardware/guest.sh` writes them inside the guest).
struct BenchScenario {
    let name: String
    let directory: URL

    var recording: String { directory.appendingPathComponent("recording.mp4").path }

    func text(_ file: String) -> String {
        (try? String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)) ?? ""
    }

    var agentLog: String { text("agent.log") }
    var agentStatus: Int? { Int(text("agent.status").trimmingCharacters(in: .whitespacesAndNewlines)) }

    /// `key=value` lines of facts.env.
    var facts: [String: String] {
        var result: [String: String] = [:]
        for line in text("facts.env").split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { result[String(parts[0])] = String(parts[1]) }
        }
        return result
    }

    /// Units of `track` the agent reported lost in the driver ("source lost N unit(s)") and
    /// dropped because the encoder was behind ("dropped N unit(s) at the source").
    func reportedLosses(track: String) -> Int {
        var total = 0
        for line in agentLog.split(separator: "\n") where line.contains("track=\(track) ") {
            let words = line.split(separator: " ").map(String.init)
            for (i, word) in words.enumerated() where word == "unit(s)" && i > 0 {
                let before = words[max(0, i - 2)...i].joined(separator: " ")
                if before.contains("lost") || before.contains("dropped"), let n = Int(words[i - 1]) { total += n }
            }
        }
        return total
    }

    /// True when the guest ran on KVM, i.e. at the host CPU's speed rather than emulated.
    var ranOnKVM: Bool { facts["accelerator"] == "kvm" }

    /// capture-agent's closing line for an audio track ("audio clock: … N ppm …").
    func audioClockSummary(track: String) -> (ppm: Double, reanchors: Int, overruns: Int)? {
        for line in agentLog.split(separator: "\n") where line.contains("track=\(track) ") && line.contains("audio clock:") {
            let words = line.split(separator: " ").map(String.init)
            guard let p = words.firstIndex(of: "ppm,"), p > 0,
                  let ppm = Double(words[p - 1].trimmingCharacters(in: CharacterSet(charactersIn: "("))),
                  let r = words.firstIndex(of: "re-anchors,"), let reanchors = Int(words[r - 1]),
                  let o = words.firstIndex(of: "overruns"), let overruns = Int(words[o - 1])
            else { continue }
            return (ppm, reanchors, overruns)
        }
        return nil
    }

    /// ffprobe's view of the recording, after checking that the file decodes without a word
    /// from ffmpeg.
    func probeCleanRecording() throws -> ProbeResult {
        guard FileManager.default.fileExists(atPath: recording) else {
            throw ToolError.unexpected("\(name): no recording.mp4 (agent exit \(agentStatus.map(String.init) ?? "none")); see \(directory.path)")
        }
        let decode = try ffmpegDecodeCheck(recording)
        // A camera's own timestamps jitter (under TCG by several ms). ffmpeg's null muxer gives
        // its encoder a time base of one guessed frame, rounds two close frames onto the same
        // tick and says "non monotonically increasing dts to muxer" — about its output, not
        // about the file. Those lines are counted; decoding again with the file's own time base
        // (`-enc_time_base -1`) must then print nothing at all.
        let lines = decode.stderr.split(separator: "\n")
        // ffmpeg folds a repeated line into "    Last message repeated N times".
        let roundingOnly = lines.allSatisfy {
            $0.contains("non monotonically increasing dts to muxer") || $0.trimmingCharacters(in: .whitespaces).hasPrefix("Last message repeated")
        }
        guard decode.status == 0, decode.stderr.isEmpty || roundingOnly else { throw ToolError.failed("ffmpeg decode of \(recording)", decode) }
        if !decode.stderr.isEmpty {
            let exact = try runTool("ffmpeg", ["-nostdin", "-hide_banner", "-v", "error", "-i", recording, "-enc_time_base", "-1", "-f", "null", "-"])
            guard exact.status == 0, exact.stderr.isEmpty else { throw ToolError.failed("ffmpeg decode of \(recording) in its own time base", exact) }
            figure(name, "ffmpeg -f null: \(lines.count) frame-rate rounding complaints from the null muxer; clean with -enc_time_base -1")
        }
        return try FFprobe.probe(recording).result
    }
}

enum BenchResults {
    /// Set by scripts/test.sh after scripts/hardware-test.sh ran (or by hand).
    static let directory: URL? = ProcessInfo.processInfo.environment["HARDWARE_BENCH_RESULTS"]
        .map { URL(fileURLWithPath: $0, isDirectory: true) }

    /// scripts/hardware-test.sh writes UNAVAILABLE with a one-line reason when qemu cannot run.
    static var unavailableReason: String? {
        guard let directory else { return nil }
        return try? String(contentsOf: directory.appendingPathComponent("UNAVAILABLE"), encoding: .utf8)
    }

    static var enabled: Bool { directory != nil && unavailableReason == nil }

    static func scenario(_ name: String) throws -> BenchScenario {
        guard let directory else { throw ToolError.unexpected("HARDWARE_BENCH_RESULTS is not set") }
        let dir = directory.appendingPathComponent(name, isDirectory: true)
        guard FileManager.default.fileExists(atPath: dir.path) else {
            throw ToolError.unexpected("scenario \(name) did not run: no \(dir.path)")
        }
        return BenchScenario(name: name, directory: dir)
    }
}

/// One figure per line in the test log, collected for docs/agent.md and the closing note.
func figure(_ scenario: String, _ text: String) {
    print("bench figure: \(scenario): \(text)")
}

extension ProbeResult {
    /// A stream's time base as seconds per tick ("1/48000" → 1/48000).
    func secondsPerTick(_ stream: ProbeStream) -> Double {
        let parts = stream.timeBase.split(separator: "/").compactMap { Double($0) }
        return parts.count == 2 && parts[1] > 0 ? parts[0] / parts[1] : 0
    }

    /// Start and end (seconds) of a stream from its packets: first pts, last pts + duration.
    ///
    /// The last packet counts whole (as long as the one before it when that is longer):
    /// ffmpeg's mov demuxer cuts a delayed track's final packet short by its empty edit — a
    /// track starting 17.6 ms into the recording "ended" 17.6 ms early, also in a file
    /// ffmpeg wrote itself with `-itsoffset` (final audio packet duration N/A) — while the
    /// edit list says the track runs to the end of that packet.
    func span(of stream: ProbeStream) -> (start: Double, end: Double)? {
        let tick = secondsPerTick(stream)
        let packets = packets(stream: stream.index).filter { $0.pts != nil }.sorted { $0.pts! < $1.pts! }
        guard let first = packets.first?.pts, let last = packets.last else { return nil }
        let lastDuration = max(last.duration ?? 0, packets.dropLast().last?.duration ?? 0)
        return (Double(first) * tick, Double(last.pts! + lastDuration) * tick)
    }
}

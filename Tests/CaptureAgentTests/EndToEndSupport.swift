import Foundation
import Logging
import MediaEncoding
import NIOPosix
import NIOSSL
import RecordServerCore
import RecordingTLS
import Shared
import Testing
import TestSupport
@testable import CaptureAgentCore

/// Runs an external tool (TestSupport's `runTool`: output to files, never pipes) and returns
/// its standard output; a non-zero exit is an error carrying its stderr.
func toolStdout(_ path: String, _ arguments: [String]) throws -> Data {
    let out = try runTool(path, arguments)
    guard out.status == 0 else {
        throw ConfigError("\(path) \(arguments.joined(separator: " ")) failed: \(out.stderr)")
    }
    return out.stdout
}

/// What the end-to-end tests read back from a recording, with ffprobe/ffmpeg as the
/// independent judge.
struct DecodedRecording {
    struct Stream { var index: Int; var type: String; var codec: String; var width: Int; var height: Int; var startTime: Double }
    var streams: [Stream] = []
    /// Per video stream (in stream order): frame numbers read from the bar code and frame times.
    var videoFrames: [[(number: Int?, time: Double)]] = []
    var audioStart = 0.0
    var audioSamples: [Int16] = []
    /// ffmpeg's complaints while decoding everything (must be empty).
    var decodeErrors = ""

    init(path: String) throws {
        let json = try JSONSerialization.jsonObject(with: toolStdout("/usr/bin/ffprobe", [
            "-v", "error", "-show_entries", "stream=index,codec_type,codec_name,width,height,start_time", "-of", "json", path,
        ])) as? [String: Any]
        for s in (json?["streams"] as? [[String: Any]]) ?? [] {
            streams.append(Stream(index: s["index"] as? Int ?? -1, type: s["codec_type"] as? String ?? "", codec: s["codec_name"] as? String ?? "",
                                  width: s["width"] as? Int ?? 0, height: s["height"] as? Int ?? 0,
                                  startTime: Double(s["start_time"] as? String ?? "0") ?? 0))
        }
        for stream in streams where stream.type == "video" {
            let times = String(decoding: try toolStdout("/usr/bin/ffprobe", [
                "-v", "error", "-select_streams", "\(stream.index)", "-show_entries", "frame=pts_time", "-of", "csv=p=0", path,
            ]), as: UTF8.self).split(whereSeparator: \.isNewline).map { Double($0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: ","))) ?? .nan }
            let raw = try toolStdout("/usr/bin/ffmpeg", [
                "-v", "error", "-i", path, "-map", "0:\(stream.index)", "-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "gray", "-",
            ])
            let size = stream.width * stream.height
            var frames: [(Int?, Double)] = []
            let bytes = [UInt8](raw)
            for i in 0..<(bytes.count / size) {
                let y = Array(bytes[(i * size)..<((i + 1) * size)])
                frames.append((TestPatternReader.frameNumber(y: y, width: stream.width, height: stream.height), i < times.count ? times[i] : .nan))
            }
            videoFrames.append(frames)
        }
        if let audio = streams.first(where: { $0.type == "audio" }) {
            audioStart = audio.startTime
            let pcm = try toolStdout("/usr/bin/ffmpeg", ["-v", "error", "-i", path, "-map", "0:\(audio.index)", "-f", "s16le", "-ac", "1", "-ar", "48000", "-"])
            audioSamples = pcm.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        }
        // What ffmpeg prints on stderr (the earlier version kept its empty stdout, so this was never checked).
        let decode = try runTool("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-i", path, "-f", "null", "-"])
        decodeErrors = decode.stderr.trimmingCharacters(in: .whitespacesAndNewlines)
        if decode.status != 0 && decodeErrors.isEmpty { decodeErrors = "ffmpeg exited \(decode.status)" }
    }

    /// Largest distance between each beep and the flash nearest to it, seconds.
    func worstAudioVideoOffset(fps: Int) -> Double? {
        guard let frames = videoFrames.first else { return nil }
        let flashes = frames.compactMap { f -> Double? in
            guard let n = f.number, n % fps == 0 else { return nil }
            return f.time
        }
        let beeps = TestToneReader.beepOnsets(samples: audioSamples, sampleRate: 48000).map { audioStart + Double($0) / 48000 }
        guard !beeps.isEmpty, !flashes.isEmpty else { return nil }
        return beeps.map { b in flashes.map { abs($0 - b) }.min()! }.max()
    }
}

/// A record-server with a fresh CA in a temporary directory, and TLS settings for agents.
final class EndToEndFixture: @unchecked Sendable {
    let directory: TemporaryDirectory
    let ca: CertificateAuthority
    var caPath: String { directory.path + "/ca.pem" }
    var dataDirectory: String { directory.path + "/data" }

    private let pki: TestServerPKI

    init() throws {
        directory = try TemporaryDirectory(prefix: "capture-agent-tests")
        pki = try TestServerPKI(directory: directory.path)
        ca = pki.ca
        let agent = try ca.issueAgentCertificate(agentID: "cam-e2e")
        try agent.write(certPath: directory.path + "/agent.pem", keyPath: directory.path + "/agent-key.pem")
    }

    var serverConfiguration: ServerConfiguration { pki.serverConfiguration(resumeWindowSeconds: 60) }

    func agentSettings(port: Int, seconds: Double, sessionID: Identifier) throws -> AgentSettings {
        AgentSettings(
            host: "127.0.0.1", port: port,
            tls: try TLSConfigurations.client(caPEMPath: caPath, certificatePEMPath: directory.path + "/agent.pem",
                                              privateKeyPEMPath: directory.path + "/agent-key.pem", serverHostname: "127.0.0.1"),
            tlsHostname: nil, agentID: "cam-e2e",
            sources: [try SourceSpec.parse("front=test:320x240@30"), try SourceSpec.parse("back=test:320x240@30"), try SourceSpec.parse("tone=test:audio")],
            video: VideoEncodingSettings(preset: "ultrafast", threads: 1),
            backoff: ReconnectBackoff(initial: 100_000_000, maximum: 1_000_000_000),
            record: true, sessionID: sessionID, duration: seconds)
    }

    /// The finished recordings (MP4 files) under the data directory.
    func recordings() -> [String] {
        let e = FileManager.default.enumerator(atPath: dataDirectory)
        var found: [String] = []
        while let p = e?.nextObject() as? String { if p.hasSuffix(".mp4") { found.append(dataDirectory + "/" + p) } }
        return found.sorted()
    }

    static var logger: Logger {
        var l = Logger(label: "e2e")
        l.logLevel = .warning
        return l
    }
}

/// Checks the acceptance criteria on a recording of two 30 fps test cameras and test audio.
func checkRecording(_ path: String, expectedFrames: ClosedRange<Int>) throws {
    let decoded = try DecodedRecording(path: path)
    #expect(decoded.decodeErrors.isEmpty, "ffmpeg: \(decoded.decodeErrors)")
    #expect(decoded.streams.map(\.type).sorted() == ["audio", "video", "video"])
    #expect(decoded.streams.filter { $0.type == "video" }.allSatisfy { $0.codec == "h264" })
    #expect(decoded.streams.first { $0.type == "audio" }?.codec == "opus")
    for frames in decoded.videoFrames {
        let numbers = frames.compactMap(\.number)
        #expect(numbers.count == frames.count, "every frame's counter is readable")
        let n = numbers.count
        #expect(expectedFrames.contains(n), "\(n) frames")
        // Every counter 0..N-1 exactly once, in order.
        #expect(numbers == Array(0..<n), "first problem at \(zip(numbers, 0...).first { $0 != $1 }.map { "\($0)" } ?? "-")")
    }
    let offset = try #require(decoded.worstAudioVideoOffset(fps: 30), "flashes and beeps found")
    #expect(offset <= 1.0 / 30 + 0.001, "audio/video offset \(offset * 1000) ms")
}

import ArgumentParser
import Foundation
import Shared

/// `recordctl demo`: records a short synthetic session (front and back test cameras and a
/// test microphone, really encoded with x264 and Opus) through the muxer into one MP4 and
/// shows what was written, as our inspector and as ffprobe see it.
struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Record a synthetic 3-track demo (front + back test cameras, test microphone) into one MP4."
    )

    @Option(help: "Seconds to record.") var seconds: Double = 10
    @Option(help: "Directory for the recording (default: a new temporary directory).") var output: String?
    @Option(help: "Video size as WIDTHxHEIGHT.") var size: String = "640x360"
    @Option(help: "Video frame rate.") var fps: Int = 30
    @Flag(help: "Write the finished file with moov first (web faststart).") var faststart = false

    func validate() throws {
        guard seconds > 0, seconds <= 600 else { throw ValidationError("--seconds must be between 0 and 600") }
        guard parsedSize != nil else { throw ValidationError("--size must look like 640x360 with even numbers of at least 128x96") }
        guard (1...120).contains(fps) else { throw ValidationError("--fps must be between 1 and 120") }
    }

    var parsedSize: (width: Int, height: Int)? {
        let parts = size.split(separator: "x").compactMap { Int($0) }
        guard parts.count == 2, parts[0] >= 128, parts[1] >= 96, parts[0] % 2 == 0, parts[1] % 2 == 0 else { return nil }
        return (parts[0], parts[1])
    }

    func run() throws {
        let (width, height) = parsedSize!
        let directory = try output ?? FileManager.default.url(for: .itemReplacementDirectory, in: .userDomainMask,
                                                                  appropriateFor: URL(fileURLWithPath: NSTemporaryDirectory()), create: true).path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)

        printError("encoding \(Formatting.seconds(seconds)) of front + back test cameras (\(width)x\(height)@\(fps), x264) and a test tone (Opus)…")
        let recording = try SyntheticRecording.generate(
            seconds: seconds,
            videos: [.init(label: "front", width: width, height: height, fps: fps),
                     .init(label: "back", width: width, height: height, fps: fps)],
            audio: .init(label: "mic"))

        var config = MuxerConfiguration(tracks: recording.tracks, directory: directory, baseName: "demo",
                                        creationTime: Int64(Date().timeIntervalSince1970))
        config.finalizeMode = faststart ? .faststart : .inPlace
        let muxer = try MP4Muxer(configuration: config)
        try muxer.start()
        var fragments = 0
        var acked: UInt64 = 0
        for sample in recording.samples {
            for case let .fragmentDurable(report) in try muxer.append(sample) {
                fragments += 1
                acked = report.durableThroughSequence
                printError("  fragment \(report.fragmentSequence): \(report.sampleCount) samples, \(Formatting.bytes(UInt64(report.byteCount))) durable; acknowledged through sequence \(acked)")
            }
        }
        let summary = try muxer.finish()
        guard let file = summary.segments.first else { throw ValidationError("the demo recorded nothing") }

        print("Recorded \(recording.samples.count) samples from \(recording.tracks.count) sources into \(file.path)")
        print("")
        print(InspectCommand.text(try MP4Inspection.inspect(path: file.path)))
        print("")
        print("ffprobe's view:")
        print(Self.ffprobe(file.path))
    }

    static func ffprobe(_ path: String) -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["ffprobe", "-v", "error", "-show_entries",
                             "stream=index,codec_name,width,height,nb_frames,start_time,duration:stream_tags=handler_name",
                             "-of", "compact=p=0", path]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        do { try process.run() } catch { return "  (ffprobe not available: \(error))" }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map { "  " + $0 }.joined(separator: "\n")
    }
}

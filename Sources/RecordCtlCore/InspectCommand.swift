import ArgumentParser
import Foundation
import Shared

/// `recordctl inspect FILE`: what is inside an MP4, from its boxes.
struct InspectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Show the tracks, codecs, sizes, durations and layout of an MP4 file (works offline)."
    )

    @Argument(help: "The MP4 file.") var file: String
    @Flag(help: "Print JSON instead of a table.") var json = false

    func run() throws {
        let inspection: MP4Inspection
        do { inspection = try MP4Inspection.inspect(path: file) } catch {
            throw CLIFailure(.failed, "cannot inspect \(file): \(error.message)")
        }
        // A file without ftyp and movie is not an ISO BMFF file at all (Matroska, WebM, …):
        // say so and fail instead of printing an empty summary.
        if inspection.brands.isEmpty, inspection.tracks.isEmpty {
            throw CLIFailure(.failed, "\(file) is not an MP4 file (no ftyp box, no tracks); recordctl inspects ISO BMFF files only — try ffprobe")
        }
        print(json ? Self.json(inspection) : Self.text(inspection))
    }

    static func text(_ i: MP4Inspection) -> String {
        var out = "\(i.path)\n"
        out += "  size \(Formatting.bytes(i.fileSize)), \(i.layout), duration \(Formatting.seconds(i.durationSeconds))"
        if i.fragmentCount > 0 { out += ", \(i.fragmentCount) fragments" }
        if let info = i.recordingInfo, info.segmentIndex > 0 || info.segmentStartNanos != 0 {
            out += "\n  segment \(info.segmentIndex + 1), starts \(Formatting.seconds(Double(info.segmentStartNanos) / 1e9)) into the session"
        }
        out += "\n\n"
        let rows = i.tracks.map { t in
            [String(t.id), t.label, t.kind, t.codec, t.width > 0 ? "\(t.width)x\(t.height)" : "-",
             t.rotation == 0 ? "-" : "\(t.rotation)°", String(t.sampleCount), String(t.keyframeCount),
             Formatting.seconds(t.startSeconds), Formatting.seconds(t.durationSeconds),
             t.kind == "video" ? String(format: "%.2f", t.frameRate) : "-", Formatting.rate(t.bitrate)]
        }
        out += Formatting.table(["ID", "LABEL", "KIND", "CODEC", "SIZE", "ROT", "SAMPLES", "SYNC", "START", "DURATION", "FPS", "BITRATE"], rows)
        let video = i.tracks.filter { $0.kind == "video" }
        if let audio = i.tracks.first(where: { $0.kind == "audio" }), !video.isEmpty {
            let offsets = video.map { String(format: "%@ %+.1f ms", $0.label, (audio.startSeconds - $0.startSeconds) * 1000) }
            out += "\n\nA/V start offsets (audio − video): " + offsets.joined(separator: ", ")
        }
        for problem in i.problems { out += "\n  ! \(problem)" }
        return out
    }

    static func json(_ i: MP4Inspection) -> String {
        let tracks: [[String: Any]] = i.tracks.map { t in
            ["id": t.id, "label": t.label, "kind": t.kind, "codec": t.codec, "width": t.width, "height": t.height,
             "rotation": t.rotation, "timescale": t.timescale, "samples": t.sampleCount, "keyframes": t.keyframeCount,
             "bytes": t.payloadBytes, "start_seconds": t.startSeconds, "duration_seconds": t.durationSeconds,
             "bitrate": t.bitrate]
        }
        var object: [String: Any] = ["path": i.path, "size": i.fileSize, "layout": i.layout, "brands": i.brands,
                                     "duration_seconds": i.durationSeconds, "fragments": i.fragmentCount,
                                     "tracks": tracks, "problems": i.problems]
        if let info = i.recordingInfo {
            object["segment_index"] = info.segmentIndex
            object["segment_start_ns"] = info.segmentStartNanos
        }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}

extension Error {
    /// The message of a typed muxer error, or the description of anything else.
    var message: String { (self as? MuxerError)?.message ?? String(describing: self) }
}

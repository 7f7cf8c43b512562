import Foundation
import MediaEncoding
import RecordServerCore
import Testing

/// Independent checks of a recorded file with ffprobe and ffmpeg (tools we did not write).
enum Oracle {
    struct Stream: Equatable {
        var codec: String
        var handler: String
        var packets: Int
    }

    struct ToolResult {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static func run(_ arguments: [String]) throws -> ToolResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("oracle-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("out"), err = dir.appendingPathComponent("err")
        FileManager.default.createFile(atPath: out.path, contents: nil)
        FileManager.default.createFile(atPath: err.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        try process.run()
        process.waitUntilExit()
        return ToolResult(status: process.terminationStatus, stdout: (try? String(contentsOf: out, encoding: .utf8)) ?? "",
                          stderr: (try? String(contentsOf: err, encoding: .utf8)) ?? "")
    }

    /// `ffmpeg -v error -i FILE -f null -` must exit 0 and print nothing.
    static func decodeErrors(_ path: String) throws -> String? {
        let r = try run(["ffmpeg", "-nostdin", "-v", "error", "-i", path, "-f", "null", "-"])
        let text = r.stderr.trimmingCharacters(in: .whitespacesAndNewlines)
        return r.status == 0 && text.isEmpty ? nil : "exit \(r.status): \(text)"
    }

    /// Per stream: codec, handler name (our track label) and the packet count ffprobe counts.
    /// ffprobe's duration of the whole file (the movie), seconds.
    static func duration(_ path: String) throws -> Double {
        let r = try run(["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "default=nw=1:nk=1", path])
        guard r.status == 0, let seconds = Double(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw TestAgentError("ffprobe cannot read the duration of \(path): \(r.stderr)")
        }
        return seconds
    }

    /// The catalog says what the file holds: size, duration, per-track sample counts (by
    /// label, against ffprobe's packet counts), and no track left `active`.
    static func expectCatalogMatchesFile(_ recording: RecordingRecord, tracks: [TrackRecord],
                                         sourceLocation: SourceLocation = #_sourceLocation) throws {
        let size = try FileManager.default.attributesOfItem(atPath: recording.path)[.size] as? Int64
        #expect(recording.sizeBytes == size, "catalog size \(recording.sizeBytes) B, file \(size ?? -1) B", sourceLocation: sourceLocation)
        let seconds = try duration(recording.path)
        #expect(abs(recording.durationSeconds - seconds) < 0.05, "catalog duration \(recording.durationSeconds) s, ffprobe \(seconds) s",
                sourceLocation: sourceLocation)
        let packets = Dictionary(try streams(recording.path).map { ($0.handler, Int64($0.packets)) }, uniquingKeysWith: +)
        for track in tracks {
            #expect(track.samples == packets[track.label], "track \(track.label): catalog \(track.samples) samples, file \(packets[track.label] ?? -1)",
                    sourceLocation: sourceLocation)
            #expect(track.status != .active, "track \(track.label) still active after the session ended", sourceLocation: sourceLocation)
        }
    }

    static func streams(_ path: String) throws -> [Stream] {
        let r = try run(["ffprobe", "-v", "error", "-count_packets", "-show_entries",
                         "stream=codec_name,nb_read_packets:stream_tags=handler_name", "-of", "json", path])
        guard r.status == 0, let json = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any],
              let streams = json["streams"] as? [[String: Any]] else {
            throw TestAgentError("ffprobe cannot read \(path): \(r.stderr)")
        }
        return streams.map { s in
            Stream(codec: s["codec_name"] as? String ?? "?",
                   handler: (s["tags"] as? [String: Any])?["handler_name"] as? String ?? "",
                   packets: Int(s["nb_read_packets"] as? String ?? "") ?? -1)
        }
    }

    /// Per video stream: the frame counter of every decoded picture, read from the test
    /// pattern's bar code (nil where it cannot be read). ffmpeg decodes to 8-bit grey.
    static func videoFrameNumbers(_ path: String) throws -> [[Int?]] {
        let r = try run(["ffprobe", "-v", "error", "-select_streams", "v", "-show_entries", "stream=index,width,height",
                         "-of", "csv=p=0", path])
        var result: [[Int?]] = []
        for line in r.stdout.split(separator: "\n") {
            let f = line.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
            guard f.count == 3 else { continue }
            let (index, width, height) = (f[0], f[1], f[2])
            let raw = FileManager.default.temporaryDirectory.appendingPathComponent("frames-\(UUID().uuidString).gray")
            defer { try? FileManager.default.removeItem(at: raw) }
            let decode = try run(["ffmpeg", "-nostdin", "-v", "error", "-i", path, "-map", "0:\(index)", "-fps_mode", "passthrough",
                                  "-f", "rawvideo", "-pix_fmt", "gray", raw.path])
            guard decode.status == 0 else { throw TestAgentError("ffmpeg cannot decode \(path): \(decode.stderr)") }
            let bytes = [UInt8](try Data(contentsOf: raw))
            let size = width * height
            result.append((0..<(bytes.count / size)).map { i in
                TestPatternReader.frameNumber(y: Array(bytes[(i * size)..<((i + 1) * size)]), width: width, height: height)
            })
        }
        return result
    }

    /// Packet pts of one stream, in its time base, in file order.
    static func packetTimes(_ path: String, stream: Int) throws -> [Int64] {
        let r = try run(["ffprobe", "-v", "error", "-select_streams", "\(stream)", "-show_entries", "packet=pts", "-of", "csv=p=0", path])
        return r.stdout.split(separator: "\n").compactMap { Int64($0.trimmingCharacters(in: .whitespaces)) }
    }
}

extension Oracle {
    struct Packet: Equatable {
        var pts: Int64
        var dts: Int64
        var size: Int
        var keyframe: Bool
    }

    /// Every packet of every stream (outer index = stream index), in file order, timestamps
    /// in the stream's time base as ffprobe reports them (edit lists applied).
    static func packets(_ path: String) throws -> [[Packet]] {
        let r = try run(["ffprobe", "-v", "error", "-show_entries", "packet=stream_index,pts,dts,size,flags", "-of", "json", path])
        guard r.status == 0, let json = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any],
              let packets = json["packets"] as? [[String: Any]] else {
            throw TestAgentError("ffprobe cannot list the packets of \(path): \(r.stderr)")
        }
        var result: [[Packet]] = []
        for p in packets {
            let stream = p["stream_index"] as? Int ?? 0
            while result.count <= stream { result.append([]) }
            result[stream].append(Packet(pts: (p["pts"] as? NSNumber)?.int64Value ?? .min, dts: (p["dts"] as? NSNumber)?.int64Value ?? .min,
                                         size: Int(p["size"] as? String ?? "") ?? (p["size"] as? Int ?? -1),
                                         keyframe: (p["flags"] as? String)?.hasPrefix("K") ?? false))
        }
        return result
    }
}

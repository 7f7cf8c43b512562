import Foundation
import MediaEncoding

/// Independent checks of a recorded file with ffprobe and ffmpeg (tools we did not write),
/// in the forms the server, agent and recordctl tests compare against what went in.
public enum Oracle {
    public struct Stream: Equatable, Sendable {
        public var codec: String
        public var handler: String
        public var packets: Int

        public init(codec: String, handler: String, packets: Int) {
            self.codec = codec
            self.handler = handler
            self.packets = packets
        }
    }

    public struct Packet: Equatable, Sendable {
        public var pts: Int64
        public var dts: Int64
        public var size: Int
        public var keyframe: Bool
    }

    /// `ffmpeg -v error -i FILE -f null -` must exit 0 and print nothing: nil when it does,
    /// otherwise its exit status and what it printed.
    public static func decodeErrors(_ path: String) throws -> String? {
        let r = try ffmpegDecodeCheck(path)
        let text = r.stderr.trimmingCharacters(in: .whitespacesAndNewlines)
        return r.status == 0 && text.isEmpty ? nil : "exit \(r.status): \(text)"
    }

    /// ffprobe's duration of the whole file (the movie), seconds.
    public static func duration(_ path: String) throws -> Double {
        let r = try runTool("ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "default=nw=1:nk=1", path])
        guard r.status == 0, let seconds = Double(r.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw ToolError.failed("ffprobe cannot read the duration of \(path)", r)
        }
        return seconds
    }

    /// Per stream: codec, handler name (our track label) and the packet count ffprobe counts.
    public static func streams(_ path: String) throws -> [Stream] {
        let r = try runTool("ffprobe", ["-v", "error", "-count_packets", "-show_entries",
                                        "stream=codec_name,nb_read_packets:stream_tags=handler_name", "-of", "json", path])
        guard r.status == 0, let json = try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any],
              let streams = json["streams"] as? [[String: Any]] else {
            throw ToolError.failed("ffprobe cannot read \(path)", r)
        }
        return streams.map { s in
            Stream(codec: s["codec_name"] as? String ?? "?",
                   handler: (s["tags"] as? [String: Any])?["handler_name"] as? String ?? "",
                   packets: FFprobe.int(s["nb_read_packets"]) ?? -1)
        }
    }

    /// Per video stream: the frame counter of every decoded picture, read from the test
    /// pattern's bar code (nil where it cannot be read).
    public static func videoFrameNumbers(_ path: String) throws -> [[Int?]] {
        let r = try runTool("ffprobe", ["-v", "error", "-select_streams", "v", "-show_entries", "stream=index,width,height",
                                        "-of", "csv=p=0", path])
        var result: [[Int?]] = []
        for line in r.stdoutText.split(separator: "\n") {
            let f = line.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
            guard f.count == 3 else { continue }
            result.append(try decodedFrameNumbers(file: path, streamIndex: f[0], width: f[1], height: f[2]))
        }
        return result
    }

    /// Packet pts of one stream, in its time base, in file order.
    public static func packetTimes(_ path: String, stream: Int) throws -> [Int64] {
        let r = try runTool("ffprobe", ["-v", "error", "-select_streams", "\(stream)", "-show_entries", "packet=pts", "-of", "csv=p=0", path])
        return r.stdoutText.split(separator: "\n").compactMap { Int64($0.trimmingCharacters(in: .whitespaces)) }
    }

    /// Every packet of every stream (outer index = stream index), in file order, timestamps
    /// in the stream's time base as ffprobe reports them (edit lists applied).
    public static func packets(_ path: String) throws -> [[Packet]] {
        let r = try runTool("ffprobe", ["-v", "error", "-show_entries", "packet=stream_index,pts,dts,size,flags", "-of", "json", path])
        guard r.status == 0, let json = try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any],
              let packets = json["packets"] as? [[String: Any]] else {
            throw ToolError.failed("ffprobe cannot list the packets of \(path)", r)
        }
        var result: [[Packet]] = []
        for p in packets {
            let stream = FFprobe.int(p["stream_index"]) ?? 0
            while result.count <= stream { result.append([]) }
            result[stream].append(Packet(pts: FFprobe.int64(p["pts"]) ?? .min, dts: FFprobe.int64(p["dts"]) ?? .min,
                                         size: FFprobe.int(p["size"]) ?? -1,
                                         keyframe: (p["flags"] as? String)?.hasPrefix("K") ?? false))
        }
        return result
    }
}

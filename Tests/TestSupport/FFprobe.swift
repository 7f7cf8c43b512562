import Foundation
import MediaEncoding

public struct ProbePacket: Sendable {
    public var streamIndex: Int
    public var pts: Int64?
    public var dts: Int64?
    public var duration: Int64?
    public var size: Int
    public var flags: String
    public var hash: String?

    public var isKeyframe: Bool { flags.contains("K") }
}

public struct ProbeStream: @unchecked Sendable {
    public var index: Int
    public var codecType: String
    public var codecName: String
    public var width: Int?
    public var height: Int?
    public var timeBase: String
    public var nbFrames: Int?
    public var startTime: Double?
    public var handlerName: String?
    /// `rotation` of the stream's "Display Matrix" side data, as ffprobe prints it.
    public var displayRotation: Double?
    public var raw: [String: Any]
}

public struct ProbeResult: @unchecked Sendable {
    public var streams: [ProbeStream]
    public var packets: [ProbePacket]
    public var formatName: String
    public var raw: [String: Any]

    public func stream(label: String) -> ProbeStream? { streams.first { $0.handlerName == label } }
    public func packets(stream index: Int) -> [ProbePacket] { packets.filter { $0.streamIndex == index } }
}

/// ffprobe as an oracle: everything comes from its JSON, parsed with JSONSerialization.
public enum FFprobe {
    public static func probe(_ file: String) throws -> (result: ProbeResult, stderr: String) {
        let out = try runTool("ffprobe", ["-v", "error", "-print_format", "json", "-show_format", "-show_streams",
                                          "-show_packets", "-show_data_hash", "adler32", file])
        guard out.status == 0 else { throw ToolError.failed("ffprobe \(file)", out) }
        guard let json = try JSONSerialization.jsonObject(with: out.stdout) as? [String: Any] else {
            throw ToolError.unexpected("ffprobe printed no JSON object for \(file)")
        }
        return (parse(json), out.stderr)
    }

    /// The streams only (no packets): quick for a long file.
    public static func streams(_ file: String) throws -> [ProbeStream] {
        let out = try runTool("ffprobe", ["-v", "error", "-print_format", "json", "-show_streams", file])
        guard out.status == 0 else { throw ToolError.failed("ffprobe \(file)", out) }
        guard let json = try JSONSerialization.jsonObject(with: out.stdout) as? [String: Any] else {
            throw ToolError.unexpected("ffprobe printed no JSON object for \(file)")
        }
        return parse(json).streams
    }

    public static func parse(_ json: [String: Any]) -> ProbeResult {
        let streams = (json["streams"] as? [[String: Any]] ?? []).map { s -> ProbeStream in
            let tags = s["tags"] as? [String: Any] ?? [:]
            let sideData = s["side_data_list"] as? [[String: Any]] ?? []
            let matrix = sideData.first { ($0["side_data_type"] as? String) == "Display Matrix" }
            return ProbeStream(
                index: int(s["index"]) ?? -1,
                codecType: s["codec_type"] as? String ?? "",
                codecName: s["codec_name"] as? String ?? "",
                width: int(s["width"]), height: int(s["height"]),
                timeBase: s["time_base"] as? String ?? "",
                nbFrames: int(s["nb_frames"]),
                startTime: double(s["start_time"]),
                handlerName: tags["handler_name"] as? String,
                displayRotation: matrix.flatMap { double($0["rotation"]) },
                raw: s)
        }
        let packets = (json["packets"] as? [[String: Any]] ?? []).map { p in
            ProbePacket(streamIndex: int(p["stream_index"]) ?? -1, pts: int64(p["pts"]), dts: int64(p["dts"]), duration: int64(p["duration"]),
                        size: int(p["size"]) ?? -1, flags: p["flags"] as? String ?? "", hash: p["data_hash"] as? String)
        }
        let format = json["format"] as? [String: Any] ?? [:]
        return ProbeResult(streams: streams, packets: packets, formatName: format["format_name"] as? String ?? "", raw: json)
    }

    public static func int(_ v: Any?) -> Int? { int64(v).map { Int($0) } }

    public static func int64(_ v: Any?) -> Int64? {
        switch v {
        case let n as NSNumber: n.int64Value
        case let s as String: Int64(s)
        default: nil
        }
    }

    public static func double(_ v: Any?) -> Double? {
        switch v {
        case let n as NSNumber: n.doubleValue
        case let s as String: Double(s)
        default: nil
        }
    }
}

/// `ffmpeg -v error -i F -f null -`: a clean decode prints nothing and exits 0.
public func ffmpegDecodeCheck(_ file: String) throws -> ToolOutput {
    try runTool("ffmpeg", ["-nostdin", "-hide_banner", "-v", "error", "-i", file, "-f", "null", "-"])
}

/// Decodes stream `streamIndex` of `file` to 8-bit luma and reads the bar-coded frame number
/// of every picture, in presentation order (nil where it cannot be read).
public func decodedFrameNumbers(file: String, streamIndex: Int, width: Int, height: Int) throws -> [Int?] {
    let out = try runTool("ffmpeg", ["-nostdin", "-hide_banner", "-v", "error", "-i", file, "-map", "0:\(streamIndex)",
                                     "-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "gray", "-"])
    guard out.status == 0 else { throw ToolError.failed("ffmpeg rawvideo decode of \(file)", out) }
    let frameBytes = width * height
    let bytes = [UInt8](out.stdout)
    guard bytes.count % frameBytes == 0 else {
        throw ToolError.unexpected("decoded \(bytes.count) bytes, not a multiple of \(width)x\(height)")
    }
    return stride(from: 0, to: bytes.count, by: frameBytes).map { start in
        TestPatternReader.frameNumber(y: Array(bytes[start..<start + frameBytes]), width: width, height: height)
    }
}

/// Top-level boxes of a file: (type, offset, size), read straight from the bytes.
public func topLevelBoxes(_ path: String) throws -> [(type: String, offset: UInt64, size: UInt64)] {
    let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
    defer { try? handle.close() }
    let fileSize = try handle.seekToEnd()
    var boxes: [(String, UInt64, UInt64)] = []
    var offset: UInt64 = 0
    while offset + 8 <= fileSize {
        try handle.seek(toOffset: offset)
        let header = [UInt8](try handle.read(upToCount: 16) ?? Data())
        guard header.count >= 8 else { break }
        var size = UInt64(header[0]) << 24 | UInt64(header[1]) << 16 | UInt64(header[2]) << 8 | UInt64(header[3])
        let type = String(decoding: header[4..<8], as: UTF8.self)
        if size == 1 {
            guard header.count == 16 else { break }
            size = header[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        } else if size == 0 {
            size = fileSize - offset
        }
        boxes.append((type, offset, size))
        guard size >= 8 else { break }
        offset += size
    }
    return boxes
}

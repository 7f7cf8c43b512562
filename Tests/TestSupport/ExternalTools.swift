import Foundation

/// Output of a finished child process.
public struct ToolOutput {
    public var status: Int32
    public var stdout: Data
    public var stderr: String

    public var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
}

public enum ToolError: Error, CustomStringConvertible {
    case notFound(String)
    case failed(String, ToolOutput)
    case unexpected(String)

    public var description: String {
        switch self {
        case let .notFound(tool): "\(tool) not found on PATH"
        case let .failed(what, out): "\(what) exited \(out.status): \(out.stderr.prefix(2000))"
        case let .unexpected(what): what
        }
    }
}

/// Runs `tool` (looked up on PATH) to completion. stdout and stderr go to temporary files,
/// never pipes, so a chatty child (ffmpeg writing raw video) can never block on a full pipe.
public func runTool(_ tool: String, _ arguments: [String]) throws -> ToolOutput {
    let dir = try ScratchDirectory(prefix: "tool")
    let outURL = dir.url.appendingPathComponent("stdout")
    let errURL = dir.url.appendingPathComponent("stderr")
    _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
    _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
    let out = try FileHandle(forWritingTo: outURL)
    let err = try FileHandle(forWritingTo: errURL)
    defer {
        try? out.close()
        try? err.close()
    }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [tool] + arguments
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = out
    process.standardError = err
    try process.run()
    process.waitUntilExit()
    return ToolOutput(status: process.terminationStatus,
                      stdout: try Data(contentsOf: outURL),
                      stderr: String(decoding: try Data(contentsOf: errURL), as: UTF8.self))
}

/// A uniquely named directory under the system temporary directory, removed on deinit
/// (kept when `MIT_KEEP_FILES` is set, for looking at the MP4s by hand).
public final class ScratchDirectory: @unchecked Sendable {
    public let url: URL
    public var path: String { url.path }

    public init(prefix: String = "mit") throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("MuxerIT-\(prefix)-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    public func file(_ name: String) -> String { url.appendingPathComponent(name).path }

    /// Regular files in the directory, sorted by name.
    public func listing() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }

    deinit {
        if ProcessInfo.processInfo.environment["MIT_KEEP_FILES"] == nil {
            try? FileManager.default.removeItem(at: url)
        } else {
            print("MuxerIntegrationTests: kept \(url.path)")
        }
    }
}

/// Adler-32 (RFC 1950), the cheapest of the hashes ffprobe's `-show_data_hash` knows.
public func adler32(_ bytes: [UInt8]) -> UInt32 {
    var a: UInt32 = 1
    var b: UInt32 = 0
    var i = 0
    while i < bytes.count {
        let end = min(bytes.count, i + 5552)
        while i < end {
            a &+= UInt32(bytes[i])
            b &+= a
            i += 1
        }
        a %= 65521
        b %= 65521
    }
    return (b << 16) | a
}

public func hex8(_ v: UInt32) -> String {
    let s = String(v, radix: 16)
    return String(repeating: "0", count: 8 - s.count) + s
}

import Foundation

/// Output of a finished child process.
public struct ToolOutput: Sendable {
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

/// Runs `tool` (looked up on PATH, or an absolute path) to completion.
public func runTool(_ tool: String, _ arguments: [String]) throws -> ToolOutput {
    try runProcess("/usr/bin/env", [tool] + arguments)
}

/// ``runTool(_:_:)`` on a thread of its own, for a tool that talks to a server running in
/// the test's process (curl against an admin listener): waiting for it on the cooperative
/// pool would hold one of its threads (two on a two-core machine) while the server's tasks
/// need them to answer, and with two such waits both sides wait forever.
public func runToolOffPool(_ tool: String, _ arguments: [String]) async throws -> ToolOutput {
    try await offPool { try runTool(tool, arguments) }
}

/// Runs blocking work (a child process that talks to a server in the test's process) on a
/// thread of its own; see ``runToolOffPool(_:_:)`` for why.
public func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

/// Runs the executable at `path` to completion, with `environment` (the test's own when nil).
/// stdout and stderr go to temporary files, never pipes, so a chatty child (ffmpeg writing raw
/// video) can never block on a full pipe.
public func runProcess(_ path: String, _ arguments: [String], environment: [String: String]? = nil) throws -> ToolOutput {
    let dir = try TemporaryDirectory(prefix: "process")
    let outURL = dir.fileURL("stdout"), errURL = dir.fileURL("stderr")
    _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
    _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
    let out = try FileHandle(forWritingTo: outURL)
    let err = try FileHandle(forWritingTo: errURL)
    defer {
        // Closing a handle the child already wrote through cannot lose what it wrote.
        try? out.close()
        try? err.close()
    }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    if let environment { process.environment = environment }
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = out
    process.standardError = err
    try process.run()
    process.waitUntilExit()
    return ToolOutput(status: process.terminationStatus,
                      stdout: try Data(contentsOf: outURL),
                      stderr: String(decoding: try Data(contentsOf: errURL), as: UTF8.self))
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

import Foundation
import RecordServerCore

/// The real `record-server` executable, started from a configuration file and killed with
/// SIGKILL when a test wants a crash.
public final class ServerProcess: @unchecked Sendable {
    public let configPath: String
    public let port: Int
    public let logPath: String
    private var process: ChildProcess?
    /// Added to the inherited environment of the server process.
    public var environment: [String: String] = [:]
    /// A command that runs the server elsewhere, e.g. ``NetworkHosts/launcher(_:)`` (on a host
    /// of the fleet); it must exec the server in place, so that ``kill9()`` reaches it.
    public var launcher: [String] = []
    /// Where ``waitUntilListening()`` looks for the listener (the host's address when it runs on one).
    public var address = "127.0.0.1"

    public static var binary: String { BuiltProducts.path("record-server") ?? ".build/debug/record-server" }

    /// The configuration it starts with; ``reconfigure(_:)`` changes it for the next start.
    public private(set) var configuration: ServerConfiguration

    /// - Parameters:
    ///   - ingestPort: fixed across restarts when given (agents reconnect to it), else a free one.
    ///   - adminPort: the admin API on 127.0.0.1 with the fixture's token; off when nil.
    public init(fixture: ServerFixture, name: String = "server", ingestPort: Int? = nil, adminPort: Int? = nil) throws {
        port = try ingestPort ?? LoopbackPort.free()
        var config = fixture.configuration
        config.ingest = .init(host: "127.0.0.1", port: port)
        if let adminPort {
            config.admin = .init(enabled: true, host: "127.0.0.1", port: adminPort, token: ServerFixture.adminToken)
        } else {
            config.admin.enabled = false
            config.admin.token = nil
        }
        configuration = config
        configPath = fixture.directory + "/\(name).json"
        logPath = fixture.directory + "/\(name).log"
        try writeConfiguration()
        try FileManager.default.createDirectory(atPath: config.dataDirectory, withIntermediateDirectories: true)
    }

    /// Changes the configuration file; the change applies from the next ``start()``.
    public func reconfigure(_ change: (inout ServerConfiguration) -> Void) throws {
        change(&configuration)
        try writeConfiguration()
    }

    private func writeConfiguration() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(configuration).write(to: URL(fileURLWithPath: configPath))
    }

    public func start() throws {
        let arguments = ["--config", configPath, "--log-level", "info"]
        if let program = launcher.first {
            process = try ChildProcess(program, Array(launcher.dropFirst()) + [Self.binary] + arguments, environment: environment, logPath: logPath)
        } else {
            process = try ChildProcess(Self.binary, arguments, environment: environment, logPath: logPath)
        }
    }

    /// Waits until the listener accepts connections (bounded: 30 s).
    public func waitUntilListening() async throws {
        for _ in 0..<300 {
            if LoopbackPort.accepts(port, host: address) { return }
            guard process?.isRunning == true else { throw ToolError.unexpected("record-server exited: \(log)") }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw ToolError.unexpected("record-server did not listen on \(port): \(log)")
    }

    /// The running server's pid (0 before `start`).
    public var pid: Int32 { process?.pid ?? 0 }

    /// Waits for the process to exit by itself (bounded: 30 s) and returns its exit status.
    public func waitForExit() async throws -> Int32 {
        guard let process else { throw ToolError.unexpected("record-server was never started") }
        return try await process.waitForExit()
    }

    public func kill9() { process?.kill9() }

    public func terminate() { process?.terminate() }

    public var isRunning: Bool { process?.isRunning == true }

    /// What it logged so far ("" before the log file exists: nothing logged yet).
    public var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
}

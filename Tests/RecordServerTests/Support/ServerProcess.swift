import Foundation
import TestSupport
@testable import RecordServerCore

/// The real `record-server` executable, started from a configuration file and killed with
/// SIGKILL when a test wants a crash.
final class ServerProcess: @unchecked Sendable {
    let configPath: String
    let port: Int
    let logPath: String
    private var process: Process?
    /// Added to the inherited environment of the server process.
    var environment: [String: String] = [:]

    static var binary: String { BuiltProducts.path("record-server") ?? ".build/debug/record-server" }

    /// The configuration it starts with; ``reconfigure(_:)`` changes it for the next start.
    private(set) var configuration: ServerConfiguration

    /// - Parameters:
    ///   - ingestPort: fixed across restarts when given (agents reconnect to it), else a free one.
    ///   - adminPort: the admin API on 127.0.0.1 with the fixture's token; off when nil.
    init(fixture: ServerFixture, name: String = "server", ingestPort: Int? = nil, adminPort: Int? = nil) throws {
        port = try ingestPort ?? Self.freePort()
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
    func reconfigure(_ change: (inout ServerConfiguration) -> Void) throws {
        change(&configuration)
        try writeConfiguration()
    }

    private func writeConfiguration() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(configuration).write(to: URL(fileURLWithPath: configPath))
    }

    func start() throws {
        guard FileManager.default.isExecutableFile(atPath: Self.binary) else {
            throw TestAgentError("\(Self.binary) is missing: build it first (swift build)")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = ["--config", configPath, "--log-level", "info"]
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        if !FileManager.default.fileExists(atPath: logPath) { FileManager.default.createFile(atPath: logPath, contents: nil) }
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        log.seekToEndOfFile()
        process.standardError = log
        process.standardOutput = log
        try process.run()
        self.process = process
    }

    /// Waits until the listener accepts connections (bounded: 30 s).
    func waitUntilListening() async throws {
        for _ in 0..<300 {
            if Self.canConnect(port: port) { return }
            guard process?.isRunning == true else { throw TestAgentError("record-server exited: \(log)") }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw TestAgentError("record-server did not listen on \(port): \(log)")
    }

    /// The running server's pid (0 before `start`).
    var pid: Int32 { process?.processIdentifier ?? 0 }

    /// Waits for the process to exit by itself (bounded: 30 s) and returns its exit status.
    func waitForExit() async throws -> Int32 {
        for _ in 0..<300 {
            if let process, !process.isRunning { return process.terminationStatus }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw TestAgentError("record-server did not exit: \(log)")
    }

    func kill9() {
        guard let process else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    func terminate() {
        guard let process, process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
    }

    var isRunning: Bool { process?.isRunning == true }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    static func canConnect(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        return connectLoopback(fd, port: port)
    }

    /// connect(2) of the TCP socket `fd` to 127.0.0.1:`port`.
    static func connectLoopback(_ fd: Int32, port: Int) -> Bool {
        var address = loopback(port: port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw TestAgentError("no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

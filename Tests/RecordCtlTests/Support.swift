import Foundation
import Logging
import NIOPosix
import NIOSSL
import RecordServerCore
import RecordingTLS
import Shared
import Testing
import TestSupport
@testable import CaptureAgentCore

/// The recordctl executable built next to the tests (`swift build --build-tests` builds it).
let recordctlBinary = BuiltProducts.path("recordctl")

struct CommandResult {
    var arguments: [String] = []
    var status: Int32
    var stdout: String
    var stderr: String
    var output: String { stdout + stderr }
    /// stdout as a JSON object; a failure names the command, its exit status and both streams.
    func json() throws -> [String: Any] {
        try #require((try? JSONSerialization.jsonObject(with: Data(stdout.utf8))) as? [String: Any],
                     "not a JSON object from \(arguments.joined(separator: " ")) (exit \(status)): stdout \"\(stdout)\" stderr \"\(stderr)\"")
    }
}

/// Runs an executable and captures both streams.
func runProcess(_ path: String, _ arguments: [String], environment: [String: String]? = nil) throws -> CommandResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    if let environment { process.environment = environment }
    let out = Pipe(), err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    // Read stderr on another thread so neither pipe can fill up and block the child.
    let errBox = DataBox()
    let errThread = Thread { errBox.data = err.fileHandleForReading.readDataToEndOfFile(); errBox.done.signal() }
    errThread.start()
    let stdout = out.fileHandleForReading.readDataToEndOfFile()
    errBox.done.wait()
    process.waitUntilExit()
    return CommandResult(arguments: arguments, status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
                         stderr: String(decoding: errBox.data, as: UTF8.self))
}

final class DataBox: @unchecked Sendable {
    var data = Data()
    let done = DispatchSemaphore(value: 0)
}

/// Runs the built recordctl with a clean environment (plus `environment`).
func recordctl(_ arguments: [String], environment: [String: String] = [:]) throws -> CommandResult {
    let binary = try #require(recordctlBinary, "build recordctl first: swift build --build-tests")
    var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("RECORDCTL_") }
    env.merge(environment) { $1 }
    return try runProcess(binary, arguments, environment: env)
}

struct FixtureError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A real record-server (ingest over mutual TLS and the admin HTTP listener on loopback) with
/// a fresh CA in a temporary directory, and optionally a real capture agent with test sources.
final class ServerWithAgent: @unchecked Sendable {
    static let adminToken = "recordctl-test-token-5f0c1d2e3b4a"
    let directory: String
    let ca: CertificateAuthority
    var configuration: ServerConfiguration
    private(set) var running: RecordServer.RunningServer?
    private var agent: AgentRuntime?
    private var agentTask: Task<Void, any Error>?
    private var group: MultiThreadedEventLoopGroup?

    var dataDirectory: String { configuration.dataDirectory }
    var tokenFile: String { directory + "/admin.token" }
    var adminURL: String { "http://127.0.0.1:\(running?.adminPort ?? 0)" }
    /// Environment for recordctl: server URL and token file.
    var environment: [String: String] { ["RECORDCTL_SERVER": adminURL, "RECORDCTL_TOKEN_FILE": tokenFile] }

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("recordctl-\(UUID().uuidString)").path
        let pki = try TestServerPKI(directory: directory)
        ca = pki.ca
        try (Self.adminToken + "\n").write(toFile: directory + "/admin.token", atomically: true, encoding: .utf8)
        configuration = pki.serverConfiguration(adminToken: Self.adminToken, resumeWindowSeconds: 30)
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    static var logger: Logger {
        var logger = Logger(label: "recordctl-tests")
        logger.logLevel = .critical
        return logger
    }

    func start() async throws {
        let server = try RecordServer(configuration: configuration, logger: Self.logger)
        running = try await server.start()
    }

    /// Starts a capture agent that waits for the server's commands (no self-started session).
    func startAgent(id: String, sources: [String] = ["front=test:320x240@30", "tone=test:audio"]) async throws {
        let cert = try ca.issueAgentCertificate(agentID: id)
        try cert.write(certPath: directory + "/\(id).pem", keyPath: directory + "/\(id)-key.pem")
        let settings = AgentSettings(
            host: "127.0.0.1", port: try #require(running?.ingestPort),
            tls: try TLSConfigurations.client(caPEMPath: directory + "/ca.pem", certificatePEMPath: directory + "/\(id).pem",
                                              privateKeyPEMPath: directory + "/\(id)-key.pem", serverHostname: "127.0.0.1"),
            tlsHostname: nil, agentID: try Identifier(validating: id),
            sources: try sources.map { try SourceSpec.parse($0) },
            video: VideoEncodingSettings(preset: "ultrafast", threads: 1),
            backoff: ReconnectBackoff(initial: 100_000_000, maximum: 1_000_000_000),
            record: false)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let agent = try AgentRuntime(settings: settings, logger: Self.logger, group: group)
        self.group = group
        self.agent = agent
        agentTask = Task { try await agent.run() }
    }

    func stop() async {
        if let agent, let agentTask {
            agent.shutdown()
            _ = try? await agentTask.value
        }
        try? await group?.shutdownGracefully()
        await running?.stop()
    }
}

/// Runs an external tool (ffprobe, ffmpeg) and captures its output.
func tool(_ name: String, _ arguments: [String]) throws -> CommandResult {
    try runProcess("/usr/bin/" + name, arguments)
}

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

struct CommandResult: Sendable {
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

extension CommandResult {
    init(_ output: ToolOutput, arguments: [String]) {
        self.init(arguments: arguments, status: output.status, stdout: output.stdoutText, stderr: output.stderr)
    }
}

/// Runs the built recordctl with a clean environment (plus `environment`).
func recordctl(_ arguments: [String], environment: [String: String] = [:]) throws -> CommandResult {
    let binary = try #require(recordctlBinary, "build recordctl first: swift build --build-tests")
    var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("RECORDCTL_") }
    env.merge(environment) { $1 }
    return CommandResult(try runProcess(binary, arguments, environment: env), arguments: arguments)
}

struct FixtureError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A real record-server (TestSupport's ``ServerFixture``: ingest over mutual TLS and the admin
/// HTTP listener on loopback), and optionally a real capture agent with test sources.
final class ServerWithAgent: @unchecked Sendable {
    static let adminToken = ServerFixture.adminToken
    let server: ServerFixture
    private var agent: AgentRuntime?
    private var agentTask: Task<Void, any Error>?
    private var group: MultiThreadedEventLoopGroup?

    var directory: String { server.directory }
    var dataDirectory: String { server.dataDirectory }
    var tokenFile: String { server.adminTokenFile }
    var adminURL: String { server.adminURL }
    /// Environment for recordctl: server URL and token file.
    var environment: [String: String] { ["RECORDCTL_SERVER": adminURL, "RECORDCTL_TOKEN_FILE": tokenFile] }

    init() throws { server = try ServerFixture(prefix: "recordctl") }

    static var logger: Logger {
        var logger = Logger(label: "recordctl-tests")
        logger.logLevel = .critical
        return logger
    }

    func start() async throws { try await server.start(logger: Self.logger) }

    /// Starts a capture agent that waits for the server's commands (no self-started session).
    func startAgent(id: String, sources: [String] = ["front=test:320x240@30", "tone=test:audio"]) async throws {
        let settings = try server.agentSettings(agentID: id, port: try #require(server.running?.ingestPort), sources: sources, record: false)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let agent = try AgentRuntime(settings: settings, logger: Self.logger, group: group)
        self.group = group
        self.agent = agent
        agentTask = Task { try await agent.run() }
    }

    /// Waits until an agent is connected and returns the agents as `recordctl agents --json`
    /// lists them (recordctl off the cooperative pool: see RemoteControlTests+TrackStream).
    @discardableResult
    func connectedAgents() async throws -> [[String: Any]] {
        let env = environment
        let listing = try await eventually("the agent to connect") { () -> CommandResult? in
            let result = try await offPool { try recordctl(["agents", "--json"] + RemoteControlTests.pollTimeout, environment: env) }
            return (try result.json()["agents"] as? [[String: Any]] ?? []).isEmpty ? nil : result
        }
        return try listing.json()["agents"] as? [[String: Any]] ?? []
    }

    func stop() async {
        if let agent, let agentTask {
            agent.shutdown()
            _ = try? await agentTask.value
        }
        try? await group?.shutdownGracefully()
        await server.stop()
    }
}

/// Runs an external tool (ffprobe, ffmpeg) and captures its output.
func tool(_ name: String, _ arguments: [String]) throws -> CommandResult {
    CommandResult(try runTool(name, arguments), arguments: arguments)
}

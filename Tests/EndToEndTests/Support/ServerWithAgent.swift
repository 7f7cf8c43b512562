import Foundation
import Logging
import NIOPosix
import Testing
import TestSupport
@testable import CaptureAgentCore

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

    /// Starts a capture agent that waits for the server's commands (no self-started session),
    /// stamping with `clock`.
    func startAgent(id: String, sources: [String] = ["front=test:320x240@30", "tone=test:audio"],
                    clock: any MonotonicClock = SystemMonotonicClock()) async throws {
        let settings = try server.agentSettings(agentID: id, port: try #require(server.running?.ingestPort), sources: sources, record: false)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let agent = try AgentRuntime(settings: settings, clock: clock, logger: Self.logger, group: group)
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

    /// Stops the agent, its event-loop group and the server; a second call does nothing (a
    /// test may stop early and keep a `defer` that stops again).
    func stop() async {
        let (agent, agentTask, group) = (self.agent, self.agentTask, self.group)
        (self.agent, self.agentTask, self.group) = (nil, nil, nil)
        if let agent, let agentTask {
            agent.shutdown()
            // The test judged what it needed before stopping; how the agent's run ended is not part of it.
            _ = try? await agentTask.value
        }
        // Clean-up at the end of a test: a group that fails to shut down holds nothing a later test uses.
        try? await group?.shutdownGracefully()
        await server.stop()
    }
}

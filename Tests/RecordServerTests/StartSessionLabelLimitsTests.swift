import Foundation
@testable import RecordServerCore
import Shared
import Testing
import TestSupport

/// A start's labels travel to the agent in StartSession, whose labels the protocol bounds
/// (32 of them, values of at most 1024 bytes: protocol.md §4). Labels past those bounds are a
/// 400 naming the bound at once; before, the command could not be encoded, never reached the
/// agent, and the request waited 10 s to answer 202 "accepted" for a session that never came.
@Suite("Start labels within the protocol's bounds", .serialized)
struct StartSessionLabelLimitsTests {
    static func labels(count: Int, valueBytes: Int) -> String {
        let value = String(repeating: "v", count: valueBytes)
        return "{" + (0 ..< count).map { #""k\#($0)":"\#(value)""# }.joined(separator: ",") + "}"
    }

    @Test(arguments: [
        (33, 1, "33 labels; at most 32"),
        (1, 1025, "label \"k0\" is 1025 bytes long; at most 1024"),
    ])
    func labelsPastTheProtocolsBoundsAreRefusedBeforeReachingTheAgent(count: Int, valueBytes: Int, message: String) async throws {
        let fixture = try ServerFixture()
        let port = try await fixture.start()
        let client = AdminClient(port: try #require(fixture.running?.adminPort), token: ServerFixture.adminToken)
        let agent = try await fixture.connectAgent("cam-labels", port: port)

        let refused = try await client.post("/v1/sessions", json: #"{"agent":"cam-labels","labels":\#(Self.labels(count: count, valueBytes: valueBytes))}"#)
        #expect(refused.status == 400)
        #expect(try refused.errorMessage() == message)

        // At the bounds the start reaches the agent, with every label.
        async let started = client.post("/v1/sessions", json: #"{"agent":"cam-labels","labels":\#(Self.labels(count: 32, valueBytes: 1024))}"#)
        let command = try await agent.wait(for: "StartSession") { if case .startSession = $0 { true } else { false } }
        guard case .startSession(let start) = command else { throw TestAgentError("unreachable") }
        #expect(start.labels.count == 32)
        #expect(agent.startCommands == 1, "the refused start must not reach the agent")
        let content = try SessionContent.make(sessionID: "s-labels", seconds: 1)
        _ = try await agent.open(content.open)
        #expect(try await started.status == 201)
        await agent.disconnect()
        await fixture.stop()
    }
}

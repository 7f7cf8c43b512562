import Foundation
@testable import RecordServerCore
import Shared
import Testing
import TestSupport

/// A start is idempotent (issue 13, finding 3): an agent that records already is not sent
/// StartSession at all, and a start that works answers with the new session's id.
@Suite("Idempotent start", .serialized)
struct IdempotentStartTests {
    @Test("POST /v1/sessions answers 201 with the session the agent opened, then 409 naming it while it records; the agent never sees the second start")
    func secondStartIsRefusedBeforeItReachesTheAgent() async throws {
        let fixture = try ServerFixture()
        _ = try await fixture.start()
        let adminPort = try #require(fixture.running?.adminPort)
        let client = AdminClient(port: adminPort, token: ServerFixture.adminToken)
        let port = try #require(fixture.running?.ingestPort)
        let agent = try await fixture.connectAgent("cam-a", port: port)
        let content = try SessionContent.make(sessionID: "s-idem", seconds: 2)

        // The agent answers the StartSession by opening its session; the POST returns its id.
        async let started = client.post("/v1/sessions", json: #"{"agent":"cam-a"}"#)
        let command = try await agent.wait(for: "StartSession") { if case .startSession = $0 { true } else { false } }
        #expect(command == .startSession(StartSession(labels: [])))
        _ = try await agent.open(content.open)
        let first = try await started
        #expect(first.status == 201)
        #expect(try first.object()["session_id"] as? String == "s-idem")

        for sample in content.samples.prefix(20) { try await agent.send(.sample(sample)) }
        let second = try await client.post("/v1/sessions", json: #"{"agent":"cam-a"}"#)
        #expect(second.status == 409)
        #expect((try second.object()["error"] as? [String: Any])?["session_id"] as? String == "s-idem")

        // Nothing reached the agent: every message it reads until the session closes is counted.
        for sample in content.samples.dropFirst(20) { try await agent.send(.sample(sample)) }
        let closed = try await agent.close("s-idem", finalSequence: UInt64(content.samples.count))
        #expect(closed.durableSequence == UInt64(content.samples.count))
        #expect(agent.startCommands == 1, "the second start must not reach the agent")
        await agent.disconnect()
        await fixture.stop()
    }
}

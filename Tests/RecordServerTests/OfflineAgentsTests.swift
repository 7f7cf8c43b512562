import Foundation
@testable import RecordServerCore
import Shared
import Testing
import TestSupport

/// `GET /v1/agents` lists agents seen before that are not connected now (`offline_agents`),
/// from the catalog's sightings, with the last message heard before they left.
@Suite("Offline agents", .serialized)
struct OfflineAgentsTests {
    @Test func anAgentThatLeftIsListedOfflineWithItsLastMessageAndBackOnlineWhenItReturns() async throws {
        let fixture = try ServerFixture()
        _ = try await fixture.start()
        defer { Task { await fixture.stop() } }
        let client = AdminClient(port: try #require(fixture.running?.adminPort), token: ServerFixture.adminToken)
        let port = try #require(fixture.running?.ingestPort)

        let before = Date()
        let agent = try await fixture.connectAgent("cam-gone", port: port)
        let online = try await client.get("/v1/agents").object()
        #expect((online["agents"] as? [[String: Any]])?.map { $0["id"] as? String } == ["cam-gone"])
        #expect((online["offline_agents"] as? [Any])?.isEmpty == true)
        // A heartbeat is a message: it moves the agent's last sighting.
        try await Task.sleep(for: .milliseconds(300))
        try await agent.send(.heartbeat(Heartbeat(nonce: 1, originTime: 0)))
        let heard = try await eventually("the heartbeat to be seen") { () -> String? in
            let agents = try await client.get("/v1/agents").object()["agents"] as? [[String: Any]]
            let lastSeen = agents?.first?["last_seen"] as? String
            return lastSeen == agents?.first?["connected_at"] as? String ? nil : lastSeen
        }
        await agent.disconnect()

        let offline = try await eventually("the agent to be listed offline") { () -> [String: Any]? in
            let body = try await client.get("/v1/agents").object()
            guard (body["agents"] as? [Any])?.isEmpty == true else { return nil }
            return (body["offline_agents"] as? [[String: Any]])?.first
        }
        #expect(offline["id"] as? String == "cam-gone")
        #expect(offline["last_seen"] as? String == heard, "the last message heard, not the handshake")
        #expect((offline["last_address"] as? String)?.hasPrefix("127.0.0.1:") == true)
        let firstSeen = try Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(offline["first_seen"] as? String ?? "")
        #expect(firstSeen >= before.addingTimeInterval(-1) && firstSeen <= Date())

        // Back: online again, and no longer offline.
        let returned = try await fixture.connectAgent("cam-gone", port: port)
        let again = try await client.get("/v1/agents").object()
        #expect((again["agents"] as? [[String: Any]])?.map { $0["id"] as? String } == ["cam-gone"])
        #expect((again["offline_agents"] as? [Any])?.isEmpty == true)
        await returned.disconnect()
    }
}

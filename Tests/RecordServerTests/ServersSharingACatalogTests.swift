import Foundation
@testable import RecordServerCore
import Shared
import Testing
import TestSupport

/// Two record-servers on one PostgreSQL catalog (issue 18): each is itself (`server-id`), each
/// sees the other in `GET /v1/servers`, and a restart of one never takes the other's live
/// session for its own unfinished one (before server ids, the restarted server would have
/// waited for it, then finalized its rows as recovered while the other still recorded it).
@Suite("Servers sharing a catalog", .serialized)
struct ServersSharingACatalogTests {
    @Test func eachServerSeesTheFleetAndARestartLeavesTheOthersSessionAlone() async throws {
        let a = try await ServerFixture.with(catalog: .postgresql)
        let b = try ServerFixture()
        b.configuration.catalog = a.configuration.catalog
        let portA = try await a.start()
        _ = try await b.start()
        let idA = try ServerIdentity.load(dataDirectory: a.dataDirectory)
        let idB = try ServerIdentity.load(dataDirectory: b.dataDirectory)
        #expect(idA != idB)
        #expect(try ServerIdentity.load(dataDirectory: a.dataDirectory) == idA, "the id is kept across starts")

        // A records half a session; B restarts meanwhile, as after a crash.
        let content = try SessionContent.make(sessionID: "s-on-a", seconds: 2)
        let agent = try await a.connectAgent("agent-1", port: portA)
        _ = try await agent.open(content.open)
        let half = content.samples.count / 2
        for sample in content.samples.prefix(half) { try await agent.send(.sample(sample)) }
        await b.stop()
        _ = try await b.start()
        let liveOnB = try await #require(b.server).registry.liveSessionIDs()
        #expect(!liveOnB.contains("s-on-a"), "B must not wait for A's session: \(liveOnB)")

        // The fleet, from either server.
        let client = AdminClient(port: try #require(b.running?.adminPort), token: ServerFixture.adminToken)
        let fleet = try await eventually("both servers to have beaten") { () -> [[String: Any]]? in
            let servers = try await client.get("/v1/servers").object()["servers"] as? [[String: Any]]
            // Each row names its ingest address once its server has bound the port.
            return servers?.count == 2 && servers?.allSatisfy({ ($0["ingest_address"] as? String)?.isEmpty == false }) == true ? servers : nil
        }
        #expect(Set(fleet.compactMap { $0["id"] as? String }) == [idA, idB])
        #expect(fleet.allSatisfy { $0["alive"] as? Bool == true })
        let rowOfA = try #require(fleet.first { $0["id"] as? String == idA })
        #expect(rowOfA["ingest_address"] as? String == "127.0.0.1:\(portA)")

        for sample in content.samples.dropFirst(half) { try await agent.send(.sample(sample)) }
        _ = try await agent.close("s-on-a", finalSequence: UInt64(content.samples.count))
        await agent.disconnect()
        await a.stop()
        await b.stop()
        let row = try #require(try a.serverCatalog().session(id: "s-on-a"))
        #expect(row.status == .completed && row.serverID == idA, "\(row)")
        let file = try #require(try a.serverCatalog().recordings(sessionID: "s-on-a").first)
        #expect(file.status == .completed)
        try Oracle.expectCatalogMatchesFile(file, tracks: try a.serverCatalog().tracks(sessionID: "s-on-a"))
    }
}

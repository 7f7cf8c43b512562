import Foundation
@testable import RecordServerCore
import Shared
import Testing
import TestSupport

/// The catalog says what the files hold (issue 13, finding 5): a live recording shows what
/// is durable so far, a finished one what the finished file holds.
@Suite("Catalog truth", .serialized)
struct CatalogTruthTests {
    @Test("a recording being written shows its durable size and duration, not 0 B and 0 s; finished, the catalog matches the file")
    func liveAndFinishedFiguresComeFromTheFile() async throws {
        for backend in CatalogBackend.allCases { try await liveAndFinishedFiguresComeFromTheFile(backend) }
    }

    private func liveAndFinishedFiguresComeFromTheFile(_ backend: CatalogBackend) async throws {
        let fixture = try await ServerFixture.with(catalog: backend)
        let port = try await fixture.start()
        let content = try SessionContent.make(sessionID: "s-live", seconds: 4)
        let agent = try await fixture.connectAgent("agent-1", port: port)
        _ = try await agent.open(content.open)
        for sample in content.samples.prefix(content.samples.count / 2) { try await agent.send(.sample(sample)) }
        try await agent.send(.heartbeat(Heartbeat(nonce: 3, originTime: 0)))
        _ = try await agent.wait(for: "heartbeat reply") { _ in true }
        #expect(agent.highestAck > 0, "some fragments are durable")

        let registry = try #require(fixture.server).registry
        let live = try #require(try await registry.recordings(RecordingFilter()).first { $0.sessionID == "s-live" })
        #expect(live.status == .recording)
        let onDisk = try FileManager.default.attributesOfItem(atPath: live.path)[.size] as? Int64 ?? 0
        #expect(live.sizeBytes > 0 && live.sizeBytes <= onDisk, "live row \(live.sizeBytes) B, file \(onDisk) B")
        #expect(live.durationSeconds > 0.5 && live.durationSeconds <= 2.5, "live row \(live.durationSeconds) s of the 2 s sent")
        let (detail, _) = try await registry.recording(id: live.id)
        #expect(detail.sizeBytes > 0 && detail.durationSeconds > 0)

        for sample in content.samples.dropFirst(content.samples.count / 2) { try await agent.send(.sample(sample)) }
        _ = try await agent.close("s-live", finalSequence: UInt64(content.samples.count))
        await agent.disconnect()
        await fixture.stop()
        let catalog = try fixture.serverCatalog()
        let recording = try #require(try catalog.recordings(sessionID: "s-live").first, "\(backend)")
        #expect(recording.status == .completed, "\(backend)")
        try Oracle.expectCatalogMatchesFile(recording, tracks: try catalog.tracks(sessionID: "s-live"))
    }
}

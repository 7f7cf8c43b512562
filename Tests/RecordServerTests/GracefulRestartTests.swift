import Foundation
@testable import RecordServerCore
import Shared
import Testing
import TestSupport

/// A graceful stop (SIGTERM, `systemctl restart`) in the middle of a session suspends it: the
/// restarted server shows it as `suspended`, the agent resumes it into the same file, and an
/// operator can finish or discard it without the agent.
@Suite("Graceful restart keeps sessions resumable", .serialized)
struct GracefulRestartTests {
    /// Streams the first 3/5 of `content`, waits for an ack, then stops the server gracefully
    /// and starts it again on the same data directory. Returns the ack point before the stop.
    private func recordThenRestart(_ fixture: ServerFixture, _ content: SessionContent) async throws -> (port: Int, acknowledged: UInt64) {
        let port = try await fixture.start()
        let agent = try await fixture.connectAgent("agent-1", port: port)
        _ = try await agent.open(content.open)
        for sample in content.samples.prefix(content.samples.count * 3 / 5) { try await agent.send(.sample(sample)) }
        try await agent.send(.heartbeat(Heartbeat(nonce: 3, originTime: 0)))
        _ = try await agent.wait(for: "heartbeat reply") { _ in true }
        let acknowledged = agent.highestAck
        await fixture.stop()
        await agent.disconnect()
        #expect(try fixture.catalog().session(id: content.open.sessionID.value)?.status == .recording,
                "a suspended session stays `recording` in the catalog")
        return (try await fixture.start(), acknowledged)
    }

    private func suspended(_ fixture: ServerFixture) async throws -> [LiveSessionInfo] {
        await (try #require(fixture.server)).registry.liveSessions().filter { $0.state == "suspended" }
    }

    @Test func theAgentResumesIntoTheSameFileAndEverySampleIsThereOnce() async throws {
        let fixture = try ServerFixture()
        let content = try SessionContent.make(sessionID: "s-restart", seconds: 5)
        let (port, acknowledged) = try await recordThenRestart(fixture, content)
        #expect(acknowledged > 0, "some fragments were acknowledged before the stop")
        #expect(try await suspended(fixture).map(\.id) == ["s-restart"])

        let again = try await fixture.connectAgent("agent-1", port: port)
        let resumedAt = try await again.resume("s-restart", lastAcknowledged: acknowledged)
        #expect(resumedAt >= acknowledged)
        for sample in content.samples[Int(resumedAt)...] { try await again.send(.sample(sample)) }
        let closed = try await again.close("s-restart", finalSequence: UInt64(content.samples.count))
        #expect(closed.outcome == .finalized)
        await again.disconnect()
        await fixture.stop()

        let recordings = try fixture.recordings(session: "s-restart")
        #expect(recordings.map(\.status) == [.completed])
        let path = try #require(recordings.first).path
        #expect(try Oracle.decodeErrors(path) == nil)
        #expect(try Oracle.streams(path).map(\.packets) == content.open.tracks.map { content.counts[$0.id] ?? 0 },
                "every sample exactly once")
    }

    @Test func anOperatorStopFinishesASuspendedSessionAtOnce() async throws {
        let fixture = try ServerFixture()
        let content = try SessionContent.make(sessionID: "s-stop", seconds: 4)
        let (_, acknowledged) = try await recordThenRestart(fixture, content)
        let registry = try #require(fixture.server).registry
        try await registry.stopSession(id: "s-stop")
        #expect(try await suspended(fixture).isEmpty)
        await fixture.stop()

        #expect(try fixture.catalog().session(id: "s-stop")?.status == .recovered)
        let recording = try #require(try fixture.recordings(session: "s-stop").first)
        #expect(recording.status == .recovered)
        #expect(try Oracle.decodeErrors(recording.path) == nil)
        let packets = try Oracle.streams(recording.path).reduce(0) { $0 + $1.packets }
        #expect(packets >= Int(acknowledged), "everything acknowledged is in the file")
    }

    @Test func anOperatorCancelDiscardsASuspendedSession() async throws {
        let fixture = try ServerFixture()
        let content = try SessionContent.make(sessionID: "s-cancel", seconds: 3)
        _ = try await recordThenRestart(fixture, content)
        let path = try #require(try fixture.recordings(session: "s-cancel").first).path
        try await #require(fixture.server).registry.cancelSession(id: "s-cancel")
        #expect(try await suspended(fixture).isEmpty)
        await fixture.stop()

        #expect(try fixture.catalog().session(id: "s-cancel")?.status == .cancelled)
        #expect(try fixture.recordings(session: "s-cancel").isEmpty)
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test("a restart with segmenting newly configured resumes the session into its one file: settings are pinned per session")
    func changedSegmentSettingsDoNotBreakAResume() async throws {
        let fixture = try ServerFixture()
        let content = try SessionContent.make(sessionID: "s-pinned", seconds: 5)
        let port = try await fixture.start()
        let agent = try await fixture.connectAgent("agent-1", port: port)
        _ = try await agent.open(content.open)
        for sample in content.samples.prefix(content.samples.count / 2) { try await agent.send(.sample(sample)) }
        await fixture.stop()
        await agent.disconnect()

        fixture.configuration.segment.maxSeconds = 1  // the operator changed this meanwhile
        let again = try await fixture.connectAgent("agent-1", port: try await fixture.start())
        let resumedAt = try await again.resume("s-pinned", lastAcknowledged: 0)
        for sample in content.samples[Int(resumedAt)...] { try await again.send(.sample(sample)) }
        let closed = try await again.close("s-pinned", finalSequence: UInt64(content.samples.count))
        #expect(closed.durableSequence == UInt64(content.samples.count))
        await again.disconnect()
        await fixture.stop()

        let recordings = try fixture.recordings(session: "s-pinned")
        #expect(recordings.map(\.status) == [.completed], "one unsegmented file, as the session was started")
        let path = try #require(recordings.first).path
        #expect(path.hasSuffix("/recording.mp4"))
        #expect(try Oracle.decodeErrors(path) == nil)
        #expect(try Oracle.streams(path).map(\.packets) == content.open.tracks.map { content.counts[$0.id] ?? 0 }, "every sample exactly once")

        // What the session kept beside its files: the settings it was started with.
        #expect(try SessionSidecar.readPinnedSettings(directory: (path as NSString).deletingLastPathComponent)?.maxSegmentDuration == nil)
    }
}

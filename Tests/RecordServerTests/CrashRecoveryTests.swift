import Foundation
@testable import RecordServerCore
import Shared
import Testing
import TestSupport

/// `kill -9` of the real server process in the middle of a session.
@Suite("Crash recovery", .serialized)
struct CrashRecoveryTests {
    @Test("kill -9 mid-session, restart, resume: one file containing every sample sent")
    func killAndResume() async throws {
        let fixture = try ServerFixture()
        let server = try ServerProcess(fixture: fixture)
        try server.start()
        try await server.waitUntilListening()
        let content = try SessionContent.make(sessionID: "s-crash", seconds: 5)
        let agent = try await fixture.connectAgent("agent-1", port: server.port)
        _ = try await agent.open(content.open)
        let cut = content.samples.count * 3 / 5
        for sample in content.samples.prefix(cut) { try await agent.send(.sample(sample)) }
        // Drops the agent reported before the crash are kept only in the catalog's rows.
        let dropping = content.open.tracks[0]
        try await agent.send(.dropReport(DropReport(track: dropping.id, reason: .captureError, count: 3)))
        try await agent.roundTrip()
        if agent.highestAck == 0 { _ = try await agent.wait(for: "an ack") { if case .ack = $0 { true } else { false } } }
        let lastAck = agent.highestAck
        #expect(lastAck > 0, "some fragments must have been acknowledged before the crash")

        server.kill9()
        await agent.disconnect()
        try server.start()
        try await server.waitUntilListening()

        let again = try await fixture.connectAgent("agent-1", port: server.port)
        let acknowledged = try await again.resume("s-crash", lastAcknowledged: lastAck)
        #expect(acknowledged >= lastAck, "the server never forgets what it acknowledged")
        for sample in content.samples[Int(acknowledged)...] { try await again.send(.sample(sample)) }
        let closed = try await again.close("s-crash", finalSequence: UInt64(content.samples.count))
        #expect(closed.outcome == .finalized)
        // Read as the agent is told: the restarted server's counters start from what the file
        // and the rows held, so the rows are right already, before the files are read back.
        let told = try fixture.catalog().tracks(sessionID: "s-crash")
        await again.disconnect()
        server.terminate()

        let recordings = try fixture.recordings(session: "s-crash")
        #expect(recordings.count == 1)
        let path = try #require(recordings.first).path
        #expect(try Oracle.decodeErrors(path) == nil)
        let streams = try Oracle.streams(path)
        #expect(streams.map(\.packets) == content.open.tracks.map { content.counts[$0.id] ?? 0 },
                "every sample exactly once; server log:\n\(server.log.suffix(3000))")
        for stream in 0..<streams.count {
            let times = try Oracle.packetTimes(path, stream: stream)
            #expect(Set(times).count == times.count, "stream \(stream) has duplicates")
        }
        try Oracle.expectCatalogMatchesFile(try #require(recordings.first), tracks: told)
        #expect(told.first { $0.trackID == Int(dropping.id) }?.dropped == 3, "drops reported before the crash: \(told.map { ($0.label, $0.dropped) })")
        try Oracle.expectCatalogMatchesFile(try #require(recordings.first), tracks: try fixture.catalog().tracks(sessionID: "s-crash"))
    }

    @Test("an unfinished session not resumed within the window is finalized as recovered")
    func unresumedSessionIsRecovered() async throws {
        let fixture = try ServerFixture(resumeWindowSeconds: 1)
        let server = try ServerProcess(fixture: fixture)
        try server.start()
        try await server.waitUntilListening()
        let content = try SessionContent.make(sessionID: "s-orphan", seconds: 3)
        let agent = try await fixture.connectAgent("agent-1", port: server.port)
        _ = try await agent.open(content.open)
        for sample in content.samples { try await agent.send(.sample(sample)) }
        try await agent.send(.heartbeat(Heartbeat(nonce: 1, originTime: 0)))
        _ = try await agent.wait(for: "heartbeat reply") { _ in true }
        let acked = agent.highestAck
        server.kill9()
        await agent.disconnect()
        try server.start()
        try await server.waitUntilListening()
        // No agent comes back: after the 1 s window the server finalizes the file by recovery.
        var session: SessionRecord?
        for _ in 0..<100 {
            session = try fixture.catalog().session(id: "s-orphan")
            if session?.status != .recording { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        server.terminate()
        #expect(session?.status == .recovered)
        let recording = try #require(try fixture.recordings(session: "s-orphan").first)
        #expect(recording.status == .recovered)
        #expect(try Oracle.decodeErrors(recording.path) == nil)
        let packets = try Oracle.streams(recording.path).reduce(0) { $0 + $1.packets }
        #expect(packets >= Int(acked), "everything acknowledged is in the recovered file")
        // A recovered file's size, duration and counts come from the file, not 0 B and 0.000 s.
        try Oracle.expectCatalogMatchesFile(recording, tracks: try fixture.catalog().tracks(sessionID: "s-orphan"))
    }
}

import Foundation
import NIOCore
@testable import RecordServerCore
import Shared
import Testing
import TestSupport

/// How sessions end when something is wrong (protocol.md §6.12, §8, §9): a session-scoped
/// error ends exactly the session it names, with what was durable, and tells the agent; a
/// refused sample is never acknowledged; an abandoned session without samples leaves nothing.
@Suite("Session ending", .serialized)
struct SessionEndingTests {
    private func counts(_ samples: ArraySlice<Sample>) -> [UInt8: Int] {
        samples.reduce(into: [:]) { $0[$1.track, default: 0] += 1 }
    }

    /// Reads until SessionClosed; returns it with the error that preceded it.
    private func closedAfterError(_ agent: TestAgent) async throws -> (ErrorReport?, SessionClosed) {
        var error: ErrorReport?
        while let message = try await agent.next() {
            switch message {
            case .error(let report): error = report
            case .ack(let ack): agent.highestAck = max(agent.highestAck, ack.sequence)
            case .sessionClosed(let closed): return (error, closed)
            default: break
            }
        }
        throw TestAgentError("connection closed before SessionClosed")
    }

    @Test("a sample the muxer refuses ends the session before it: never acknowledged, and the file holds exactly the samples before it")
    func refusedSampleIsNeverAcknowledged() async throws {
        let fixture = try ServerFixture()
        let port = try await fixture.start()
        let content = try SessionContent.make(sessionID: "s-refused", seconds: 3)
        // The 60th sample of the front camera goes back in decode time: the muxer refuses it.
        let frontIndices = content.samples.indices.filter { content.samples[$0].track == 0 }
        let refusedIndex = frontIndices[60]
        var bad = content.samples[refusedIndex]
        bad.dts = content.samples[frontIndices[59]].dts
        bad.pts = bad.dts
        let agent = try await fixture.connectAgent("agent-1", port: port)
        _ = try await agent.open(content.open)
        for sample in content.samples[..<refusedIndex] { try await agent.send(.sample(sample)) }
        try await agent.send(.sample(bad))
        // Samples sent after it, before the agent heard, are ignored.
        for sample in content.samples[(refusedIndex + 1)...].prefix(20) { try await agent.send(.sample(sample)) }
        let (error, closed) = try await closedAfterError(agent)
        #expect(error?.code == .sampleRefused && error?.scope == .session)
        #expect(closed.outcome == .finalized)
        #expect(closed.durableSequence == bad.sequence - 1, "everything before the refused sample is durable, nothing after")
        #expect(agent.highestAck <= bad.sequence - 1, "no ack ever passed the refused sample")
        let session = try #require(try fixture.catalog().session(id: "s-refused"))
        #expect(session.status == .failed)
        #expect(session.error?.contains("sampleRefused") == true)
        let recording = try #require(try fixture.recordings(session: "s-refused").first)
        try IngestTests().assertFile(recording.path, content: content, expectedCounts: counts(content.samples[..<refusedIndex]))
        #expect(await fixture.server?.registry.liveSessionCount == 0, "the session's slot is free")
        await agent.disconnect()
        await fixture.stop()
    }

    @Test("a session-scoped error ends its session with SessionClosed; a new session on the same connection records normally")
    func noOrphanAfterASessionError() async throws {
        let fixture = try ServerFixture()
        fixture.configuration.maxSessions = 1
        let port = try await fixture.start()
        let first = try SessionContent.make(sessionID: "s-orphan", seconds: 2)
        let agent = try await fixture.connectAgent("agent-1", port: port)
        _ = try await agent.open(first.open)
        for sample in first.samples.prefix(40) { try await agent.send(.sample(sample)) }
        var unknown = first.samples[40]
        unknown.track = 9
        try await agent.send(.sample(unknown))
        let (error, closed) = try await closedAfterError(agent)
        #expect(error?.code == .unknownTrack && error?.scope == .session)
        #expect(closed.durableSequence == 40)
        // The only slot (maxSessions = 1) is free again: a second session opens and completes.
        let second = try SessionContent.make(sessionID: "s-after", seconds: 2)
        _ = try await agent.open(second.open)
        for sample in second.samples { try await agent.send(.sample(sample)) }
        let done = try await agent.close("s-after", finalSequence: UInt64(second.samples.count))
        #expect(done.durableSequence == UInt64(second.samples.count))
        #expect(try fixture.catalog().session(id: "s-orphan")?.status == .failed)
        try IngestTests().assertFile(try #require(try fixture.recordings(session: "s-orphan").first).path, content: first,
                                     expectedCounts: counts(first.samples.prefix(40)))
        try IngestTests().assertFile(try #require(try fixture.recordings(session: "s-after").first).path, content: second)
        await agent.disconnect()
        await fixture.stop()
    }

    /// The other session-scoped errors of the validator (protocol.md §7.2), each sent after 40
    /// good samples on a server with one session slot: each ends its session with
    /// SessionClosed at 40, the catalog says failed, and the slot is free for the next session.
    @Test("every session-scoped protocol error ends its session and frees its slot",
          arguments: [ProtocolError.Code.nonMonotonicSequence, .sequenceGap, .trackEnded, .finalSequenceMismatch])
    func everySessionScopedErrorEndsItsSession(_ expected: ProtocolError.Code) async throws {
        let fixture = try ServerFixture()
        fixture.configuration.maxSessions = 1
        let port = try await fixture.start()
        let id = try SessionID(validating: "s-\(expected.rawValue)")
        let first = try SessionContent.make(sessionID: id, seconds: 2)
        let agent = try await fixture.connectAgent("agent-1", port: port)
        _ = try await agent.open(first.open)
        for sample in first.samples.prefix(40) { try await agent.send(.sample(sample)) }
        var next = first.samples[40]
        switch expected {
        case .nonMonotonicSequence:
            next.sequence = 40
            try await agent.send(.sample(next))
        case .sequenceGap:
            next.sequence = 42
            try await agent.send(.sample(next))
        case .trackEnded:
            try await agent.send(.trackEnd(TrackEnd(track: next.track, reason: .endOfStream, message: "")))
            try await agent.send(.sample(next))
        default:
            try await agent.send(.sessionClose(SessionClose(sessionID: id, finalSequence: 99)))
        }
        let (error, closed) = try await closedAfterError(agent)
        #expect(error?.code == expected, "\(String(describing: error))")
        #expect(error?.scope == .session)
        #expect(closed.durableSequence == 40)
        #expect(try fixture.catalog().session(id: id.description)?.status == .failed)
        try IngestTests().assertFile(try #require(try fixture.recordings(session: id.description).first).path, content: first,
                                     expectedCounts: counts(first.samples.prefix(40)))
        let second = try SessionContent.make(sessionID: "s-next", seconds: 1)
        _ = try await agent.open(second.open)
        for sample in second.samples { try await agent.send(.sample(sample)) }
        let done = try await agent.close("s-next", finalSequence: UInt64(second.samples.count))
        #expect(done.durableSequence == UInt64(second.samples.count))
        await agent.disconnect()
        await fixture.stop()
    }

    /// protocol.md §6.14: a `TrackEnd` with reason error ends only its track, unless the server
    /// fails sessions on track errors; then the session ends with `trackFailed` (scope session)
    /// naming the track and the agent's message, and what was acknowledged is a finished file.
    @Test("a track error ends only its track, or with failSessionOnTrackError the session, with trackFailed",
          arguments: [false, true])
    func aTrackErrorEndsItsTrackOrWithTheSettingItsSession(_ failSession: Bool) async throws {
        let fixture = try ServerFixture()
        fixture.configuration.failSessionOnTrackError = failSession
        let port = try await fixture.start()
        let id = try SessionID(validating: failSession ? "s-track-fails-session" : "s-track-fails-track")
        let content = try SessionContent.make(sessionID: id, seconds: 2)
        let agent = try await fixture.connectAgent("agent-1", port: port)
        _ = try await agent.open(content.open)
        for sample in content.samples.prefix(40) { try await agent.send(.sample(sample)) }
        let failing = content.samples[40].track
        try await agent.send(.trackEnd(TrackEnd(track: failing, reason: .error, message: "encoder crashed")))
        if failSession {
            let (error, closed) = try await closedAfterError(agent)
            #expect(error?.code == .trackFailed, "\(String(describing: error))")
            #expect(error?.scope == .session)
            #expect(error?.message.contains("track \(failing)") == true && error?.message.contains("encoder crashed") == true,
                    "\(error?.message ?? "")")
            #expect(closed.durableSequence == 40)
            #expect(try fixture.catalog().session(id: id.description)?.status == .failed)
            try IngestTests().assertFile(try #require(try fixture.recordings(session: id.description).first).path, content: content,
                                         expectedCounts: counts(content.samples.prefix(40)))
        } else {
            // The other tracks go on to the end; the session completes.
            let rest = content.samples.dropFirst(40).filter { $0.track != failing }
            var sequence: UInt64 = 40
            var kept = Array(content.samples.prefix(40))
            for var sample in rest {
                sequence += 1
                sample.sequence = sequence
                kept.append(sample)
                try await agent.send(.sample(sample))
            }
            let closed = try await agent.close(id, finalSequence: sequence)
            #expect(closed.durableSequence == sequence)
            #expect(try fixture.catalog().session(id: id.description)?.status == .completed)
            var survivors = content
            survivors.samples = kept
            try IngestTests().assertFile(try #require(try fixture.recordings(session: id.description).first).path, content: survivors,
                                         expectedCounts: counts(kept[...]))
        }
        await agent.disconnect()
        await fixture.stop()
    }

    /// protocol.md §2: an agent id may hold several connections, but a session is attached to
    /// one. A resume from a second connection while the first still streams is `sessionBusy`
    /// for that connection only; the session goes on and completes with every sample.
    @Test("a resume of a session still attached to another connection is sessionBusy and disturbs nothing")
    func aResumeOfAnAttachedSessionIsBusy() async throws {
        let fixture = try ServerFixture()
        let port = try await fixture.start()
        let content = try SessionContent.make(sessionID: "s-attached", seconds: 2)
        let agent = try await fixture.connectAgent("agent-1", port: port)
        _ = try await agent.open(content.open)
        for sample in content.samples.prefix(20) { try await agent.send(.sample(sample)) }
        let intruder = try await fixture.connectAgent("agent-1", port: port)
        try await intruder.send(.sessionResume(SessionResume(sessionID: "s-attached", lastAcknowledged: 0)))
        let answer = try await intruder.wait(for: "the answer to the resume") { message in
            switch message {
            case .sessionAccepted, .sessionClosed, .error: true
            default: false
            }
        }
        guard case .error(let report) = answer else {
            Issue.record("expected Error sessionBusy, got \(answer)")
            return
        }
        #expect(report.code == .sessionBusy, "\(report)")
        await intruder.disconnect()
        for sample in content.samples.dropFirst(20) { try await agent.send(.sample(sample)) }
        let closed = try await agent.close("s-attached", finalSequence: UInt64(content.samples.count))
        #expect(closed.outcome == .finalized && closed.durableSequence == UInt64(content.samples.count))
        await agent.disconnect()
        await fixture.stop()
        try IngestTests().assertFile(try #require(try fixture.recordings(session: "s-attached").first).path, content: content)
    }

    @Test("the agent's own session-scoped error ends its session like the server's")
    func agentErrorEndsItsSession() async throws {
        let fixture = try ServerFixture()
        let port = try await fixture.start()
        let content = try SessionContent.make(sessionID: "s-agent-err", seconds: 2)
        let agent = try await fixture.connectAgent("agent-1", port: port)
        _ = try await agent.open(content.open)
        for sample in content.samples.prefix(30) { try await agent.send(.sample(sample)) }
        try await agent.send(.error(ErrorReport(code: .internalError, scope: .session, message: "encoder crashed")))
        let reply = try await agent.wait(for: "SessionClosed") { if case .sessionClosed = $0 { true } else { false } }
        guard case .sessionClosed(let closed) = reply else { return }
        #expect(closed.durableSequence == 30)
        #expect(try fixture.catalog().session(id: "s-agent-err")?.status == .failed)
        await agent.disconnect()
        await fixture.stop()
    }

    @Test("an agent refusing a StartSession while it records (sessionAlreadyOpen) ends nothing: its session completes with every sample")
    func refusingAStartEndsNothing() async throws {
        let fixture = try ServerFixture()
        let port = try await fixture.start()
        let content = try SessionContent.make(sessionID: "s-busy", seconds: 2)
        let agent = try await fixture.connectAgent("agent-1", port: port)
        _ = try await agent.open(content.open)
        for sample in content.samples.prefix(30) { try await agent.send(.sample(sample)) }
        try await agent.send(.error(ErrorReport(code: .sessionAlreadyOpen, scope: .session, message: "session s-busy is still recording")))
        for sample in content.samples.dropFirst(30) { try await agent.send(.sample(sample)) }
        let closed = try await agent.close("s-busy", finalSequence: UInt64(content.samples.count))
        #expect(closed.durableSequence == UInt64(content.samples.count))
        #expect(try fixture.catalog().session(id: "s-busy")?.status == .completed)
        try IngestTests().assertFile(try #require(try fixture.recordings(session: "s-busy").first).path, content: content)
        await agent.disconnect()
        await fixture.stop()
    }

    @Test("sessions opened and dropped before their first sample hold no slot and leave no directory or catalog row")
    func emptySessionsLeaveNothing() async throws {
        let fixture = try ServerFixture(resumeWindowSeconds: 600)
        fixture.configuration.maxSessions = 2
        let port = try await fixture.start()
        for i in 0..<6 {
            let content = try SessionContent.make(sessionID: try SessionID(validating: "s-empty-\(i)"), seconds: 0.1)
            let agent = try await fixture.connectAgent("agent-\(i)", port: port)
            _ = try await agent.open(content.open)
            await agent.disconnect()
        }
        let registry = try #require(fixture.server?.registry)
        for _ in 0..<200 where await registry.liveSessionCount > 0 { try await Task.sleep(for: .milliseconds(20)) }
        #expect(await registry.liveSessionCount == 0)
        for i in 0..<6 { #expect(try fixture.catalog().session(id: "s-empty-\(i)") == nil) }
        let recordings = fixture.configuration.dataDirectory + "/recordings"
        let left = (FileManager.default.enumerator(atPath: recordings)?.allObjects as? [String] ?? []).filter { $0.hasSuffix(".mcrp") || $0.hasSuffix(".mp4") }
        #expect(left.isEmpty, "left behind: \(left)")
        // Both slots are free for real sessions.
        let content = try SessionContent.make(sessionID: "s-real", seconds: 1)
        let agent = try await fixture.connectAgent("agent-real", port: port)
        _ = try await agent.open(content.open)
        for sample in content.samples { try await agent.send(.sample(sample)) }
        #expect(try await agent.close("s-real", finalSequence: UInt64(content.samples.count)).durableSequence == UInt64(content.samples.count))
        await agent.disconnect()
        await fixture.stop()
    }

    @Test("one agent id holds at most maxSessionsPerAgent sessions; others are unaffected")
    func perAgentSessionLimit() async throws {
        let fixture = try ServerFixture()
        fixture.configuration.maxSessionsPerAgent = 1
        let port = try await fixture.start()
        let first = try SessionContent.make(sessionID: "s-limit-1", seconds: 1)
        let a1 = try await fixture.connectAgent("agent-1", port: port)
        _ = try await a1.open(first.open)
        try await a1.send(.sample(first.samples[0]))
        let a2 = try await fixture.connectAgent("agent-1", port: port)
        let second = try SessionContent.make(sessionID: "s-limit-2", seconds: 1)
        try await a2.send(.sessionOpen(second.open))
        guard case .error(let refused)? = try await a2.next() else { Issue.record("expected resourceExhausted"); return }
        #expect(refused.code == .resourceExhausted && refused.scope == .session)
        let other = try await fixture.connectAgent("agent-2", port: port)
        #expect(try await other.open(SessionContent.make(sessionID: "s-other", seconds: 1).open) == 0)
        await a1.disconnect()
        await a2.disconnect()
        await other.disconnect()
        await fixture.stop()
    }
}

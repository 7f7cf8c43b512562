import Foundation
@testable import RecordServerCore
import Shared
import Testing
import TestSupport

/// protocol.md §6.7, "A session that finished meanwhile": an agent whose `SessionClosed` was
/// lost (a server killed right after finalizing) resumes the session and gets the same
/// answer again, from the catalog, instead of `unknownSession` and a report of lost samples.
@Suite("A resume of a finished session repeats its SessionClosed", .serialized)
struct ResumeFinishedSessionTests {
    /// Resumes `id` on a new connection and returns the server's answer.
    private func resumeAnswer(_ fixture: ServerFixture, port: Int, _ id: SessionID, lastAcknowledged: UInt64) async throws -> Message {
        let agent = try await fixture.connectAgent("agent-1", port: port)
        defer { Task { await agent.disconnect() } }
        try await agent.send(.sessionResume(SessionResume(sessionID: id, lastAcknowledged: lastAcknowledged)))
        return try await agent.wait(for: "the answer to the resume") { message in
            switch message {
            case .sessionClosed, .sessionAccepted, .error: true
            default: false
            }
        }
    }

    @Test(arguments: CatalogBackend.allCases)
    func aFinalizedSessionAnswersWithItsDurablePointAcrossARestart(_ backend: CatalogBackend) async throws {
        let fixture = try await ServerFixture.with(catalog: backend)
        var port = try await fixture.start()
        let content = try SessionContent.make(sessionID: "s-done", seconds: 2)
        let agent = try await fixture.connectAgent("agent-1", port: port)
        _ = try await agent.open(content.open)
        for sample in content.samples { try await agent.send(.sample(sample)) }
        let last = UInt64(content.samples.count)
        let closed = try await agent.close("s-done", finalSequence: last)
        #expect(closed == SessionClosed(sessionID: "s-done", outcome: .finalized, durableSequence: last))
        await agent.disconnect()
        #expect(try fixture.serverCatalog().session(id: "s-done")?.durableSequence == last)

        // The same server, then a restarted one (the catalog is all that is left of the session).
        let before = try await resumeAnswer(fixture, port: port, "s-done", lastAcknowledged: last - 5)
        #expect(before == .sessionClosed(closed), "\(before)")
        await fixture.stop()
        port = try await fixture.start()
        let after = try await resumeAnswer(fixture, port: port, "s-done", lastAcknowledged: 0)
        #expect(after == .sessionClosed(closed), "\(after)")

        // The resume opened nothing: the connection can open a new session at once.
        let next = try await fixture.connectAgent("agent-1", port: port)
        try await next.send(.sessionResume(SessionResume(sessionID: "s-done", lastAcknowledged: last)))
        _ = try await next.wait(for: "SessionClosed") { if case .sessionClosed = $0 { true } else { false } }
        let other = try SessionContent.make(sessionID: "s-next", seconds: 1)
        #expect(try await next.open(other.open) == 0)
        await next.disconnect()
        await fixture.stop()
    }

    @Test func aCancelledSessionAnswersCancelledAndAnotherAgentsOrAnUnknownOneIsUnknown() async throws {
        let fixture = try ServerFixture()
        let port = try await fixture.start()
        let content = try SessionContent.make(sessionID: "s-gone", seconds: 1)
        let agent = try await fixture.connectAgent("agent-1", port: port)
        _ = try await agent.open(content.open)
        for sample in content.samples.prefix(10) { try await agent.send(.sample(sample)) }
        try await agent.send(.sessionCancel(SessionCancel(sessionID: "s-gone", reason: "test")))
        _ = try await agent.wait(for: "SessionClosed") { if case .sessionClosed = $0 { true } else { false } }
        await agent.disconnect()

        let answer = try await resumeAnswer(fixture, port: port, "s-gone", lastAcknowledged: 0)
        #expect(answer == .sessionClosed(SessionClosed(sessionID: "s-gone", outcome: .cancelled, durableSequence: 0)), "\(answer)")

        // Someone else's finished session stays unknown to this agent, as does a made-up one.
        let stranger = try await fixture.connectAgent("agent-2", port: port)
        try await stranger.send(.sessionResume(SessionResume(sessionID: "s-gone", lastAcknowledged: 0)))
        guard case .error(let report) = try #require(try await stranger.next()) else { Issue.record("no error"); return }
        #expect(report.code == .unknownSession)
        await stranger.disconnect()
        let unknown = try await resumeAnswer(fixture, port: port, "s-never", lastAcknowledged: 0)
        guard case .error(let none) = unknown else { Issue.record("\(unknown)"); return }
        #expect(none.code == .unknownSession)
        await fixture.stop()
    }
}

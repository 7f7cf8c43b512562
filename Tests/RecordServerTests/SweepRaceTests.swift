import Foundation
@testable import RecordServerCore
import Shared
import Testing
import TestSupport

/// Issue 13, finding 4: the sweep that ends abandoned sessions checked the resume deadline
/// and finalized in two separate awaits, so an agent resuming in between had its live
/// session finalized under it as `interrupted`. Now the check and the finalize are one turn
/// of the session's actor, and a resume either gets the session back or learns that it
/// finished (with the same `SessionClosed` as any resume of a finished session).
@Suite("Resume against the sweep at the deadline", .serialized)
struct SweepRaceTests {
    /// A session of `content` recorded by `agent-1` and detached (its connection dropped).
    private func detachedSession(_ registry: SessionRegistry, _ content: SessionContent, id: String) async throws -> RecordingSession {
        var open = content.open
        open.sessionID = try SessionID(validating: id)
        let connection = await registry.newConnectionID()
        let session = (try await registry.openSession(open, agentID: "agent-1", connection: connection)).0
        _ = await session.append(content.samples.prefix(content.samples.count / 2))
        #expect(await session.detach(connection: connection, now: .now) == false, "it has samples: it waits for a resume")
        return session
    }

    /// Long after every resume window of the test.
    private let afterTheDeadline = ContinuousClock.now + .seconds(24 * 3600)

    @Test func aResumeBeforeTheSweepKeepsTheSession() async throws {
        let fixture = try ServerFixture()
        _ = try await fixture.start()
        let registry = try #require(fixture.server).registry
        let content = try SessionContent.make(sessionID: "s-template", seconds: 1)
        let session = try await detachedSession(registry, content, id: "s-first")

        guard case .resumed(let resumed, _, _) = try await registry.resumeSession("s-first", agentID: "agent-1",
                                                                               connection: await registry.newConnectionID()) else {
            Issue.record("the resume was refused"); return
        }
        #expect(resumed === session)
        await registry.sweep(now: afterTheDeadline)
        #expect(await session.isFinished == false, "an attached session is not the sweep's to end")
        _ = try await session.close()
        await registry.sessionEnded(session)
        #expect(try fixture.catalog().session(id: "s-first")?.status == .completed)
        await fixture.stop()
    }

    @Test func aResumeAfterTheSweepLearnsWhatWasStored() async throws {
        let fixture = try ServerFixture()
        _ = try await fixture.start()
        let registry = try #require(fixture.server).registry
        let content = try SessionContent.make(sessionID: "s-template", seconds: 1)
        let session = try await detachedSession(registry, content, id: "s-late")
        await registry.sweep(now: afterTheDeadline)
        #expect(await session.isFinished)
        let durable = await session.acknowledged
        #expect(durable == UInt64(content.samples.count / 2), "finalizing made every received sample durable")
        #expect(try fixture.catalog().session(id: "s-late")?.status == .interrupted)
        let outcome = try await registry.resumeSession("s-late", agentID: "agent-1", connection: await registry.newConnectionID())
        guard case .alreadyClosed(let closed) = outcome else { Issue.record("resumed a finished session"); return }
        #expect(closed == SessionClosed(sessionID: "s-late", outcome: .finalized, durableSequence: durable))
        await fixture.stop()
    }

    /// Both at once, many times: whichever wins, the agent's view and the server's agree.
    @Test func resumeAndSweepAtOnceAlwaysAgree() async throws {
        let fixture = try ServerFixture()
        _ = try await fixture.start()
        let registry = try #require(fixture.server).registry
        let content = try SessionContent.make(sessionID: "s-template", seconds: 1)
        var (kept, ended) = (0, 0)
        for round in 0 ..< 30 {
            let id = "s-race-\(round)"
            let session = try await detachedSession(registry, content, id: id)
            let connection = await registry.newConnectionID()
            async let sweep: Void = registry.sweep(now: afterTheDeadline)
            async let resume = registry.resumeSession(try SessionID(validating: id), agentID: "agent-1", connection: connection)
            let outcome = try await resume
            await sweep
            switch outcome {
            case .resumed(let resumed, _, _):
                kept += 1
                #expect(resumed === session)
                #expect(await session.isFinished == false, "round \(round): the agent got back a session the sweep finalized")
                _ = try await session.close()
                await registry.sessionEnded(session)  // as the connection does after a close
                #expect(try fixture.catalog().session(id: id)?.status == .completed)
            case .alreadyClosed(let closed):
                ended += 1
                #expect(await session.isFinished)
                let durable = await session.acknowledged
                #expect(closed.outcome == .finalized && closed.durableSequence == durable, "round \(round)")
                #expect(try fixture.catalog().session(id: id)?.status == .interrupted)
            }
        }
        #expect(kept + ended == 30)
        await fixture.stop()
    }
}

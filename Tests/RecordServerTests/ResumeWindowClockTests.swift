import Foundation
@testable import RecordServerCore
import Shared
import Testing
import TestSupport

/// Resume windows run on the server's injected clock (issue 16): a test moves a
/// ``ManualServerClock`` past the window instead of waiting it out, and the deadline holds to
/// the nanosecond either side.
@Suite("Resume windows on the server's clock")
struct ResumeWindowClockTests {
    @Test("a detached session is kept until its window has passed on the server's clock, then finalized as interrupted")
    func aDetachedSessionEndsWhenTheClockPassesItsWindow() async throws {
        let fixture = try ServerFixture(resumeWindowSeconds: 600)
        let clock = ManualServerClock()
        fixture.clock = clock
        let port = try await fixture.start()
        let registry = try #require(fixture.server?.registry)
        let content = try SessionContent.make(sessionID: "s-window", seconds: 3)
        let agent = try await fixture.connectAgent("agent-1", port: port)
        _ = try await agent.open(content.open)
        for sample in content.samples { try await agent.send(.sample(sample)) }
        try await agent.send(.heartbeat(Heartbeat(nonce: 1, originTime: 0)))
        _ = try await agent.wait(for: "an acknowledgement") { if case .ack = $0 { true } else { false } }
        let acknowledged = agent.highestAck
        await agent.disconnect()
        // The server notices the connection is gone: the session waits for a resume.
        let detachedAt = clock.now
        var state: String?
        for _ in 0..<500 {
            state = await registry.liveSessions().first { $0.id == "s-window" }?.state
            if state == "detached" { break }
            try await Task.sleep(for: .milliseconds(20))  // bounded: 10 s for the server to see the close
        }
        try #require(state == "detached", "the session is \(state ?? "gone") after its agent disconnected")

        // 600 s on the server's clock, less a nanosecond: still waiting, however often it sweeps.
        clock.advance(by: .seconds(600) - .nanoseconds(1))
        await registry.sweep()
        await registry.sweep()
        #expect(try fixture.catalog().session(id: "s-window")?.status == .recording)
        #expect(await registry.liveSessions().map(\.id) == ["s-window"])

        // The window has passed: the next sweep finalizes what was acknowledged.
        clock.advance(by: .seconds(1))
        #expect(clock.now - detachedAt > .seconds(600))
        await registry.sweep()
        #expect(try fixture.catalog().session(id: "s-window")?.status == .interrupted)
        #expect(await registry.liveSessions().isEmpty)
        let recording = try #require(try fixture.recordings(session: "s-window").first)
        #expect(try Oracle.decodeErrors(recording.path) == nil)
        let packets = try Oracle.streams(recording.path).reduce(0) { $0 + $1.packets }
        #expect(packets >= Int(acknowledged) && packets <= content.samples.count,
                "every acknowledged sample is in the file: \(packets) packets, \(acknowledged) acknowledged, \(content.samples.count) sent")
        try Oracle.expectCatalogMatchesFile(recording, tracks: try fixture.catalog().tracks(sessionID: "s-window"))
        await fixture.stop()
    }
}

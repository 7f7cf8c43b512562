import Foundation
import MediaEncoding
import NIOCore
import NIOPosix
import RecordServerCore
import RecordingTLS
import Shared
import Testing
import TestSupport
@testable import CaptureAgentCore

@Suite("Network faults between agent and record-server", .serialized)
struct NetworkFaultTests {
    /// The fixture's agent certificate, `sources`, a graceful stop by `shutdown()` (no duration).
    private func settings(_ fixture: EndToEndFixture, port: Int, sources: [String], sessionID: Identifier,
                          duration: Double?, stopTimeout: Int64 = 30_000_000_000) throws -> AgentSettings {
        var settings = try fixture.server.agentSettings(agentID: "cam-e2e", port: port, sources: sources, record: true,
                                                        sessionID: sessionID, duration: duration)
        settings.stopTimeout = stopTimeout
        return settings
    }

    /// An in-process record-server for the fixture, reached through a fault-injecting proxy.
    private func startServerBehindProxy(_ fixture: EndToEndFixture) async throws
        -> (server: RecordServer.RunningServer, group: MultiThreadedEventLoopGroup, proxy: FaultInjectingProxy) {
        let running = try await fixture.startServer()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        return (running, group, try await FaultInjectingProxy(group: group, targetPort: running.ingestPort))
    }

    /// Waits (at most 30 s) for the session to appear in the server's catalog.
    private func waitForSession(_ id: String, in catalog: Catalog) async throws -> Bool {
        for _ in 0..<300 {
            if try catalog.session(id: id) != nil { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    @Test(.timeLimit(.minutes(3)))
    func networkCutOfTenSecondsResumesIntoTheSameRecordingWithEveryFrameOnce() async throws {
        let fixture = try EndToEndFixture()
        let (running, group, proxy) = try await startServerBehindProxy(fixture)
        let agent = try AgentRuntime(
            settings: try settings(fixture, port: proxy.port,
                                   sources: ["front=test:320x240@15", "back=test:320x240@15", "tone=test:audio"],
                                   sessionID: "net-cut-1", duration: nil),
            logger: EndToEndFixture.logger, group: group)
        let started = Date()
        let recording = Task { try await agent.run() }

        // Only after the test has recorded why it gives up: how the agent and the group end adds nothing.
        func cleanUp() async {
            agent.shutdown()
            agent.shutdown()
            _ = try? await recording.value
            await proxy.close()
            await running.stop()
            try? await group.shutdownGracefully()
        }

        // Bounded wait for the session to exist on the server (through the proxy).
        let catalog = try Catalog(path: fixture.dataDirectory + "/catalog.sqlite")
        guard try await waitForSession("net-cut-1", in: catalog) else {
            await cleanUp()
            Issue.record("the agent's session never appeared in the catalog")
            return
        }
        try await Task.sleep(for: .seconds(3))
        proxy.cut()
        try await Task.sleep(for: .seconds(10))
        proxy.restore()
        try await Task.sleep(for: .seconds(3))
        // Graceful stop: capture ends, everything buffered is sent, the session is closed.
        agent.shutdown()
        try await recording.value
        let elapsed = Date().timeIntervalSince(started)
        let counts = proxy.counts
        await proxy.close()
        await running.stop()
        try await group.shutdownGracefully()

        #expect(counts.accepted >= 2, "the agent reconnected after the cut; proxy: \(counts)")
        let record = try #require(try catalog.session(id: "net-cut-1"))
        #expect(record.status == .completed, "\(record.status) \(record.error ?? "")")
        let files = fixture.recordings()
        #expect(files.count == 1, "\(files)")
        let file = try #require(files.first)
        #expect(file.contains("net-cut-1"), "\(file)")
        let decoded = try DecodedRecording(path: file)
        // The sources kept capturing during the cut (the resend buffer covered it): about
        // `elapsed` seconds at 15 fps, with loose bounds.
        let low = max(1, Int((elapsed - 6) * 15)), high = Int((elapsed + 3) * 15)
        let frames = checkContiguousFrames(decoded, expected: low...high, drops: try reportedDrops(in: file, dataDirectory: fixture.dataDirectory))
        #expect(frames.allSatisfy { $0 >= 13 * 15 }, "the cut is inside the recording: \(frames) frames")
    }

    @Test(.timeLimit(.minutes(5)))
    func audioVideoOffsetStaysWithinOneFrameOverSixtySeconds() async throws {
        let fixture = try EndToEndFixture()
        let running = try await fixture.startServer()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let agent = try AgentRuntime(
            settings: try settings(fixture, port: running.ingestPort,
                                   sources: ["front=test:320x240@30", "back=test:320x240@30", "tone=test:audio"],
                                   sessionID: "av-sync-60", duration: 61),
            logger: EndToEndFixture.logger, group: group)
        try await recordThenStop(running, group) { try await agent.run() }

        let files = fixture.recordings()
        #expect(files.count == 1, "\(files)")
        let file = try #require(files.first)
        let decoded = try DecodedRecording(path: file)
        // 61 s at 30 fps: 1830 frames per camera, loose bounds.
        let counts = checkContiguousFrames(decoded, expected: 1750...1910, drops: try reportedDrops(in: file, dataDirectory: fixture.dataDirectory))
        // One flash per second on video, one beep per second on audio: all of them are compared.
        let flashes = try #require(decoded.videoFrames.first).filter { ($0.number ?? 1) % 30 == 0 }.count
        let beeps = TestToneReader.beepOnsets(samples: decoded.audioSamples, sampleRate: 48000).count
        let seconds = (counts.first ?? 0) / 30
        #expect(flashes >= 60 && abs(flashes - seconds) <= 1, "\(flashes) flashes over \(seconds) s")
        #expect(beeps >= 59 && abs(beeps - seconds) <= 2, "\(beeps) beeps over \(seconds) s")
        let offset = try #require(decoded.worstAudioVideoOffset(fps: 30), "flashes and beeps found")
        #expect(offset <= 1.0 / 30 + 0.001, "worst audio/video offset \(offset * 1000) ms over \(beeps) beeps")
    }

    /// Stopped while the server is unreachable for good (both stopped at once, the host going
    /// down): the agent gives up after its stop timeout with an error that says what was not
    /// acknowledged, instead of reconnecting until the service manager kills it.
    @Test(.timeLimit(.minutes(2)))
    func aStopWithTheServerGoneEndsAfterTheStopTimeoutWithAClearError() async throws {
        let fixture = try EndToEndFixture()
        let (running, group, proxy) = try await startServerBehindProxy(fixture)
        let agent = try AgentRuntime(
            settings: try settings(fixture, port: proxy.port, sources: ["front=test:320x240@15", "tone=test:audio"],
                                   sessionID: "stop-gone-1", duration: nil, stopTimeout: 2_000_000_000),
            logger: EndToEndFixture.logger, group: group)
        let recording = Task { try await agent.run() }
        defer { proxy.restore() }

        let catalog = try Catalog(path: fixture.dataDirectory + "/catalog.sqlite")
        let opened = try await waitForSession("stop-gone-1", in: catalog)
        if opened {
            proxy.cut()
            agent.shutdown()
        } else {
            agent.shutdown()
            agent.shutdown()
        }
        let outcome = await recording.result
        await proxy.close()
        await running.stop()
        try await group.shutdownGracefully()

        #expect(opened, "the agent's session never appeared in the catalog")
        guard case .failure(let error) = outcome else {
            Issue.record("the agent stopped cleanly although the server never confirmed the session")
            return
        }
        let message = "\(error)"
        #expect(message.contains("did not confirm session stop-gone-1 within 2 s"), "\(message)")
        #expect(message.contains("not acknowledged"), "\(message)")
    }
}

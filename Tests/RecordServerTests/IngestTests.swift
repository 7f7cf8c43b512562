import Foundation
import NIOCore
@testable import RecordServerCore
import Shared
import Testing
import TestSupport

/// The server over real TLS on loopback, fed by a test agent built from the Shared protocol
/// code; every file it writes is judged by ffprobe and ffmpeg.
@Suite("Ingest", .serialized)
struct IngestTests {
    /// Sends `content`'s samples and returns the highest ack seen (acks are read as they come).
    func stream(_ samples: ArraySlice<Sample>, to agent: TestAgent) async throws {
        for sample in samples { try await agent.send(.sample(sample)) }
    }

    func assertFile(_ path: String, content: SessionContent, expectedCounts: [UInt8: Int]? = nil) throws {
        #expect(try Oracle.decodeErrors(path) == nil, "ffmpeg must decode \(path) without errors")
        let streams = try Oracle.streams(path)
        let expected = content.open.tracks.map { t -> Oracle.Stream in
            let codec: String = if case .h264 = t.format { "h264" } else { "opus" }
            return Oracle.Stream(codec: codec, handler: t.label, packets: (expectedCounts ?? content.counts)[t.id] ?? 0)
        }
        #expect(streams == expected)
        // Every picture exactly once, in order: the frame counters read back from the pictures.
        for (numbers, track) in zip(try Oracle.videoFrameNumbers(path), content.open.tracks.filter { $0.kind == .video }) {
            let count = (expectedCounts ?? content.counts)[track.id] ?? 0
            #expect(numbers == (0..<count).map { Optional($0) }, "\(track.label): counters \(numbers.prefix(5))…")
        }
    }

    static func queueBytes(_ metrics: ServerMetrics) -> Double {
        let line = metrics.exposition().split(separator: "\n").first { $0.hasPrefix("recordserver_queue_bytes ") }
        return line.flatMap { Double($0.split(separator: " ").last ?? "") } ?? .nan
    }

    @Test("a 3-track session becomes one MP4 with every sample, acknowledged and finalized")
    func threeTrackSession() async throws {
        let fixture = try ServerFixture()
        let port = try await fixture.start()
        let content = try SessionContent.make(sessionID: "s-three", seconds: 3)
        let agent = try await fixture.connectAgent("agent-1", port: port)
        #expect(try await agent.open(content.open) == 0)
        try await stream(content.samples[...], to: agent)
        // The last, still open fragment is received but not durable: the queue gauge shows it
        // (polled, bounded: ingest processes what was sent asynchronously).
        let metrics = try #require(fixture.server?.metrics)
        var queued = 0.0
        for _ in 0..<100 where queued == 0 {
            try await Task.sleep(for: .milliseconds(50))
            queued = Self.queueBytes(metrics)
        }
        #expect(queued > 0, "recordserver_queue_bytes while the last fragment is open")
        let closed = try await agent.close("s-three", finalSequence: UInt64(content.samples.count))
        #expect(Self.queueBytes(metrics) == 0, "nothing is waiting once the session is finalized")
        #expect(closed.outcome == .finalized)
        #expect(closed.durableSequence == UInt64(content.samples.count))
        #expect(agent.highestAck == UInt64(content.samples.count))
        await agent.disconnect()
        let recordings = try fixture.recordings(session: "s-three")
        #expect(recordings.count == 1)
        #expect(recordings.first?.status == .completed)
        try assertFile(try #require(recordings.first).path, content: content)
        await fixture.stop()
    }

    @Test("cancel discards the recording and its file")
    func cancelRemovesFile() async throws {
        let fixture = try ServerFixture()
        let port = try await fixture.start()
        let content = try SessionContent.make(sessionID: "s-cancel", seconds: 2)
        let agent = try await fixture.connectAgent("agent-1", port: port)
        _ = try await agent.open(content.open)
        try await stream(content.samples.prefix(content.samples.count / 2), to: agent)
        try await agent.send(.sessionCancel(SessionCancel(sessionID: "s-cancel", reason: "test")))
        let reply = try await agent.wait(for: "SessionClosed") { if case .sessionClosed = $0 { true } else { false } }
        guard case .sessionClosed(let closed) = reply else { return }
        #expect(closed.outcome == .cancelled)
        let session = try #require(try fixture.catalog().session(id: "s-cancel"))
        #expect(session.status == .cancelled)
        #expect(!FileManager.default.fileExists(atPath: session.directory), "the session's directory must be gone")
        #expect(try fixture.recordings(session: "s-cancel").isEmpty)
        await agent.disconnect()
        await fixture.stop()
    }

    @Test("a track that fails leaves the other tracks complete")
    func trackErrorKeepsOthers() async throws {
        let fixture = try ServerFixture()
        let port = try await fixture.start()
        let full = try SessionContent.make(sessionID: "s-trackerr", seconds: 3)
        let content = full.dropping(track: 1, afterIndex: 30)
        let agent = try await fixture.connectAgent("agent-1", port: port)
        _ = try await agent.open(content.open)
        // The back camera (track 1) fails after its 30th frame; front and mic go on.
        var backSeen = 0
        for sample in content.samples {
            try await agent.send(.sample(sample))
            if sample.track == 1 {
                backSeen += 1
                if backSeen == 30 { try await agent.send(.trackEnd(TrackEnd(track: 1, reason: .error, message: "camera unplugged"))) }
            }
        }
        _ = try await agent.close("s-trackerr", finalSequence: UInt64(content.samples.count))
        await agent.disconnect()
        let recording = try #require(try fixture.recordings(session: "s-trackerr").first)
        try assertFile(recording.path, content: content)
        let tracks = try fixture.catalog().tracks(sessionID: "s-trackerr").sorted { $0.trackID < $1.trackID }
        // Once the session is closed no track is `active` any more: the failed one says so,
        // the others ended with the session.
        #expect(tracks.map(\.status) == [.ended, .failed, .ended])
        #expect(tracks[1].error == "camera unplugged")
        await fixture.stop()
    }

    @Test("disconnect and resume within the window: one file, no gap, no duplicate")
    func disconnectAndResume() async throws {
        let fixture = try ServerFixture()
        let port = try await fixture.start()
        let content = try SessionContent.make(sessionID: "s-resume", seconds: 4)
        let first = try await fixture.connectAgent("agent-1", port: port)
        _ = try await first.open(content.open)
        let half = content.samples.count / 2
        try await stream(content.samples.prefix(half), to: first)
        // Read whatever acks arrived, then drop the connection without closing the session.
        try await first.send(.heartbeat(Heartbeat(nonce: 1, originTime: 0)))
        _ = try await first.wait(for: "a heartbeat round trip") { _ in true }
        let lastAck = first.highestAck
        await first.disconnect()

        let second = try await fixture.connectAgent("agent-1", port: port)
        let acknowledged = try await second.resume("s-resume", lastAcknowledged: lastAck)
        #expect(acknowledged >= lastAck)
        #expect(acknowledged <= UInt64(half))
        // Resend everything after the server's ack point, as an agent must.
        try await stream(content.samples[Int(acknowledged)...], to: second)
        let closed = try await second.close("s-resume", finalSequence: UInt64(content.samples.count))
        #expect(closed.outcome == .finalized)
        await second.disconnect()
        let recordings = try fixture.recordings(session: "s-resume")
        #expect(recordings.count == 1)
        let path = try #require(recordings.first).path
        try assertFile(path, content: content)
        for stream in 0..<3 {
            let times = try Oracle.packetTimes(path, stream: stream)
            #expect(Set(times).count == times.count, "stream \(stream) has duplicate packets")
        }
        await fixture.stop()
    }

    @Test("an agent without a client certificate, or with one from another CA, is refused")
    func certificatesAreEnforced() async throws {
        let fixture = try ServerFixture()
        let port = try await fixture.start()
        let anonymous = try await TestAgent.connect(port: port, tls: try fixture.anonymousTLS())
        await #expect(throws: (any Error).self) { _ = try await anonymous.hello(agentID: "agent-1") }
        let stranger = try await TestAgent.connect(port: port, tls: try fixture.agentTLS("agent-1", from: try .create(commonName: "Other CA")))
        await #expect(throws: (any Error).self) { _ = try await stranger.hello(agentID: "agent-1") }
        // Claiming another agent's identity is refused at Hello.
        let impostor = try await TestAgent.connect(port: port, tls: try fixture.agentTLS("agent-2"))
        try await impostor.send(.hello(Hello(agentID: "agent-1", softwareVersion: "test")))
        let reply = try await impostor.next()
        guard case .error(let report)? = reply else {
            Issue.record("expected an authenticationFailed error, got \(String(describing: reply))")
            return
        }
        #expect(report.code == .authenticationFailed)
        await fixture.stop()
    }

    @Test("an expired agent certificate is refused")
    func expiredCertificateRefused() async throws {
        let fixture = try ServerFixture()
        let port = try await fixture.start()
        let expired = try await TestAgent.connect(port: port, tls: try fixture.agentTLS("agent-1", notBefore: Date(timeIntervalSinceNow: -7200), validity: 3600))
        await #expect(throws: (any Error).self) { _ = try await expired.hello(agentID: "agent-1") }
        await fixture.stop()
    }

    @Test("garbage, oversized and out-of-order frames end only their own connection or session; a concurrent session completes intact")
    func malformedFrameIsolation() async throws {
        let fixture = try ServerFixture()
        let port = try await fixture.start()
        let content = try SessionContent.make(sessionID: "s-good", seconds: 3)
        let good = try await fixture.connectAgent("agent-1", port: port)
        _ = try await good.open(content.open)
        try await stream(content.samples.prefix(content.samples.count / 2), to: good)

        let rogue = try await fixture.connectAgent("agent-2", port: port)
        try await rogue.sendRaw([0xDE, 0xAD, 0xBE, 0xEF, 0, 0, 0, 0, 0, 0, 0, 0])
        let reply = try await rogue.next()
        guard case .error(let report)? = reply else {
            Issue.record("expected a badMagic error, got \(String(describing: reply))")
            return
        }
        #expect(report.code == .badMagic)
        #expect(report.scope == .connection)
        #expect(try await rogue.next() == nil, "the rogue connection must be closed")

        // Oversized: a Sample header announcing 4 GiB − 1 bytes is refused before anything is buffered.
        let huge = try await fixture.connectAgent("agent-3", port: port)
        try await huge.sendRaw(Array("MCRP".utf8) + [1, MessageType.sample.rawValue, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF])
        guard case .error(let tooLarge)? = try await huge.next() else {
            Issue.record("expected frameTooLarge")
            return
        }
        #expect(tooLarge.code == .frameTooLarge && tooLarge.scope == .connection)
        #expect(try await huge.next() == nil, "the oversized connection must be closed")

        // Out of order: sample 3 after sample 1 ends that rogue's own session, nothing else.
        let rogueContent = try SessionContent.make(sessionID: "s-rogue", seconds: 1)
        let disorder = try await fixture.connectAgent("agent-4", port: port)
        _ = try await disorder.open(rogueContent.open)
        try await disorder.send(.sample(rogueContent.samples[0]))
        try await disorder.send(.sample(rogueContent.samples[2]))
        let gap = try await disorder.wait(for: "the sequence error") { if case .error = $0 { true } else { false } }
        guard case .error(let gapReport) = gap else { return }
        #expect(gapReport.code == .sequenceGap && gapReport.scope == .session)
        await disorder.disconnect()

        try await stream(content.samples.suffix(from: content.samples.count / 2), to: good)
        let closed = try await good.close("s-good", finalSequence: UInt64(content.samples.count))
        #expect(closed.outcome == .finalized)
        await good.disconnect()
        try assertFile(try #require(try fixture.recordings(session: "s-good").first).path, content: content)
        await fixture.stop()
    }
}

import Foundation
@testable import RecordServerCore
import Shared
import Testing
import TestSupport

/// A full disk: the data directory on a tiny tmpfs. Needs permission to mount (root here and
/// in CI); skipped with that reason elsewhere.
@Suite("Disk full", .serialized, .enabled(if: TinyFilesystem.canMount, "needs permission to mount a tmpfs"))
struct DiskFullTests {
    @Test("a full disk fails only the affected session, keeps what was written, and new sessions work once space is back")
    func diskFull() async throws {
        let fixture = try ServerFixture()
        let mount = try TinyFilesystem(path: fixture.directory + "/data", kilobytes: 700)
        defer { mount.unmount() }
        let port = try await fixture.start()

        // ~1.3 MB of media into 700 KiB: the session must fail part-way.
        let content = try SessionContent.make(sessionID: "s-full", seconds: 8, width: 640, height: 360)
        let agent = try await fixture.connectAgent("agent-1", port: port)
        _ = try await agent.open(content.open)
        var failure: ErrorReport?
        for sample in content.samples {
            try await agent.send(.sample(sample))
        }
        try await agent.send(.heartbeat(Heartbeat(nonce: 1, originTime: 0)))
        while let message = try await agent.next() {
            if case .error(let report) = message { failure = report; break }
            if case .ack(let ack) = message { agent.highestAck = max(agent.highestAck, ack.sequence) }
            if case .heartbeatReply = message { break }
        }
        let report = try #require(failure, "the agent must be told its session failed")
        #expect(report.code == .storageFailure)
        #expect(report.scope == .session, "only the session ends; the connection stays")

        // The catalog shares the full disk: its row says `failed` as soon as it can be
        // written (at once if SQLite has a free page, else once space is back, below).
        if let session = try fixture.catalog().session(id: "s-full"), session.status != .recording {
            #expect(session.status == .failed && session.error?.isEmpty == false, "\(session)")
        }

        // What was acknowledged is on disk and decodable (finalized or recoverable).
        let recording = try #require(try fixture.recordings(session: "s-full").first)
        if (try? MP4Inspection.inspect(path: recording.path).layout.hasPrefix("fragmented")) == true {
            try mount.grow(kilobytes: 20_000)
            _ = try MP4Recovery.recover(path: recording.path)
        }
        #expect(try Oracle.decodeErrors(recording.path) == nil)
        let packets = try Oracle.streams(recording.path).reduce(0) { $0 + $1.packets }
        #expect(packets >= Int(agent.highestAck), "everything acknowledged (\(agent.highestAck)) is in the file")
        // Every picture that made it is there exactly once, in order, from the first.
        let cameras = try Oracle.videoFrameNumbers(recording.path)
        #expect(cameras.count == 2)
        for numbers in cameras {
            #expect(!numbers.isEmpty && numbers == (0..<numbers.count).map { Optional($0) }, "frame counters \(numbers.prefix(5))…")
        }

        // Space is back: the failed session's row is written, and a new session on the same server works.
        try mount.grow(kilobytes: 40_000)
        let session = try await eventually("the failed session's row to be written once space is back") { () -> SessionRecord? in
            try fixture.catalog().session(id: "s-full").flatMap { $0.status == .recording ? nil : $0 }
        }
        #expect(session.status == .failed)
        #expect(session.error?.isEmpty == false)
        let next = try SessionContent.make(sessionID: "s-after", seconds: 2)
        _ = try await agent.open(next.open)
        for sample in next.samples { try await agent.send(.sample(sample)) }
        let closed = try await agent.close("s-after", finalSequence: UInt64(next.samples.count))
        #expect(closed.outcome == .finalized)
        await agent.disconnect()
        let after = try #require(try fixture.recordings(session: "s-after").first)
        #expect(try Oracle.decodeErrors(after.path) == nil)
        #expect(try Oracle.streams(after.path).map(\.packets) == next.open.tracks.map { next.counts[$0.id] ?? 0 })
        await fixture.stop()
    }
}

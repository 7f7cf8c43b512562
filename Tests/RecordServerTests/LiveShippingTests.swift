import AsyncHTTPClient
import Foundation
import ObjectStorage
@testable import RecordServerCore
import Shared
import Testing
import TestSupport

/// Recording sessions shipped to object storage while they record, the second
/// acknowledgement level (`RemoteAck`, protocol.md §6.13a), and a session taken over by
/// another server once its owner's lease ran out (issue 18), against a real Ceph RGW and a
/// real PostgreSQL.
@Suite("Live shipping and takeover", .serialized, .enabled(if: ObjectStoreFixture.enabled, "OBJECT_STORE_TESTS=1 (the test command sets it)"))
struct LiveShippingTests {
    static let http = HTTPClientTransport.makeHTTPClient(readTimeout: .seconds(30))

    private func configure(_ fixture: ServerFixture, bucket: String) async throws {
        let store = try await ObjectStoreFixture.shared()
        fixture.configuration.objectStore = .init(url: "s3://\(bucket)/fleet/?endpoint=\(store.endpoint)", accessKeyFile: store.accessKeyFile,
                                                  secretKeyFile: store.secretKeyFile, keepLocalCopy: true)
    }

    private func client(bucket: String) async throws -> S3Client {
        let store = try await ObjectStoreFixture.shared()
        return S3Client(location: try S3Location(parsing: "s3://\(bucket)/fleet/?endpoint=\(store.endpoint)"),
                        credentials: try S3Credentials.load(accessKeyFile: store.accessKeyFile, secretKeyFile: store.secretKeyFile),
                        transport: HTTPClientTransport(client: Self.http))
    }

    /// Reads messages until a `RemoteAck` of at least `sequence` arrives; returns the acks seen.
    private func waitForRemoteAck(_ agent: TestAgent, atLeast sequence: UInt64) async throws -> (local: UInt64, remote: UInt64) {
        var local: UInt64 = 0
        while true {
            let message = try await agent.wait(for: "RemoteAck ≥ \(sequence)") {
                switch $0 { case .ack, .remoteAck: true; default: false }
            }
            switch message {
            case .ack(let ack): local = max(local, ack.sequence)
            case .remoteAck(let ack):
                #expect(ack.sequence <= max(local, agent.highestAck), "a RemoteAck never passes the Ack point")
                if ack.sequence >= sequence { return (max(local, agent.highestAck), ack.sequence) }
            default: break
            }
        }
    }

    /// Opens a 4 s session on `fixture` as agent-1, sends its first half and waits for a
    /// `RemoteAck`: the agent, the content, how many samples were sent, and the acks seen.
    private func recordHalf(_ id: SessionID, on fixture: ServerFixture, port: Int) async throws
        -> (TestAgent, SessionContent, Int, (local: UInt64, remote: UInt64)) {
        let content = try SessionContent.make(sessionID: id, seconds: 4)
        let agent = try await fixture.connectAgent("agent-1", port: port)
        _ = try await agent.open(content.open)
        let half = content.samples.count / 2
        for sample in content.samples.prefix(half) { try await agent.send(.sample(sample)) }
        return (agent, content, half, try await waitForRemoteAck(agent, atLeast: 1))
    }

    /// The file `name` of session `id` as the chain of its chunks in the bucket.
    private func rebuilt(_ s3: S3Client, session id: String, file name: String, into scratch: TemporaryDirectory) async throws -> String {
        let listed = try await s3.listObjects(prefix: LiveFragmentKeys.sessionPrefix(id))
        let chains = LiveFragmentKeys.chains(listed.compactMap { LiveFragmentKeys.parse($0.key, size: $0.size, sessionID: id) })
        var bytes: [UInt8] = []
        for chunk in try #require(chains[name], "no chunks of \(name) in \(listed.map(\.key))") {
            #expect(UInt64(bytes.count) == chunk.offset)
            bytes += try await s3.getObject(key: chunk.key)
        }
        return try scratch.file(name, bytes)
    }

    @Test func aSessionIsShippedWhileItRecordsAndItsCloseWaitsForTheCopy() async throws {
        let bucket = ObjectStoreFixture.uniqueBucket("live")
        let fixture = try ServerFixture()
        try await configure(fixture, bucket: bucket)
        let port = try await fixture.start()
        defer { Task { await fixture.stop() } }
        let (agent, content, half, acks) = try await recordHalf("s-live", on: fixture, port: port)
        #expect(acks.remote >= 1 && acks.remote <= acks.local)

        // While it records, the bucket holds a fragmented MP4 that ffprobe reads.
        let s3 = try await client(bucket: bucket)
        let scratch = try TemporaryDirectory(prefix: "live-copy")
        let copy = try await rebuilt(s3, session: "s-live", file: "recording.mp4", into: scratch)
        #expect(try Oracle.decodeErrors(copy) == nil)
        let packets = try Oracle.streams(copy).map(\.packets).reduce(0, +)
        #expect(packets > 0 && UInt64(packets) >= acks.remote, "the copy holds at least every sample the RemoteAck named: \(packets) < \(acks.remote)")
        #expect(try await s3.getObject(key: LiveFragmentKeys.sidecar("s-live", file: SessionSidecar.openFileName)).count > 0)

        for sample in content.samples.dropFirst(half) { try await agent.send(.sample(sample)) }
        try await agent.send(.sessionClose(SessionClose(sessionID: "s-live", finalSequence: UInt64(content.samples.count))))
        var remote: UInt64 = 0
        let closed = try await agent.wait(for: "SessionClosed") { message in
            if case .remoteAck(let ack) = message { remote = max(remote, ack.sequence) }
            if case .sessionClosed = message { return true }
            return false
        }
        guard case .sessionClosed(let c) = closed else { Issue.record("no SessionClosed"); return }
        #expect(c.durableSequence == UInt64(content.samples.count))
        #expect(remote == c.durableSequence, "the RemoteAck for everything comes before SessionClosed")
        await agent.disconnect()

        // The finished file's fragments are the copy's: the copy, finalized by recovery, holds every sample.
        let wholeScratch = try TemporaryDirectory(prefix: "whole-copy")
        let whole = try await rebuilt(s3, session: "s-live", file: "recording.mp4", into: wholeScratch)
        _ = try MP4Recovery.recover(path: whole)
        try IngestTests().assertFile(whole, content: content)
    }

    @Test func anotherServerTakesTheSessionOverOnceItsOwnersLeaseRunsOut() async throws {
        let bucket = ObjectStoreFixture.uniqueBucket("takeover")
        let a = try await ServerFixture.with(catalog: .postgresql)
        let b = try ServerFixture()
        b.configuration.catalog = a.configuration.catalog
        try await configure(a, bucket: bucket)
        try await configure(b, bucket: bucket)
        let portA = try await a.start()
        let portB = try await b.start()
        defer { Task { await b.stop() } }
        let idB = try ServerIdentity.load(dataDirectory: b.dataDirectory)

        let (onA, content, half, acks) = try await recordHalf("s-moved", on: a, port: portA)

        // While A beats, its session is its own: B refuses the resume (the agent retries).
        let early = try await b.connectAgent("agent-1", port: portB)
        let busy = await #expect(throws: (any Error).self) { _ = try await early.resume("s-moved", lastAcknowledged: acks.local) }
        #expect("\(busy.map { "\($0)" } ?? "")".contains("sessionBusy"), "\(String(describing: busy))")
        await early.disconnect()

        // A's host is lost: it stops beating and its data directory is gone.
        await onA.disconnect()
        await a.stop()
        try FileManager.default.removeItem(atPath: a.dataDirectory)

        // The agent resumes on B, busy until A's lease ran out, then taken over.
        let (onB, point) = try await eventually("B to take the session over", seconds: 40) { () async throws -> (TestAgent, UInt64)? in
            let agent = try await b.connectAgent("agent-1", port: portB)
            do { return (agent, try await agent.resume("s-moved", lastAcknowledged: acks.local)) } catch {
                #expect("\(error)".contains("sessionBusy"), "\(error)")
                await agent.disconnect()
                try await Task.sleep(for: .seconds(1))
                return nil
            }
        }
        #expect(point >= acks.remote && point <= UInt64(half), "B continues from what the copy holds: \(point), RemoteAck \(acks.remote)")
        for sample in content.samples.dropFirst(Int(point)) { try await onB.send(.sample(sample)) }
        let closed = try await onB.close("s-moved", finalSequence: UInt64(content.samples.count))
        #expect(closed.durableSequence == UInt64(content.samples.count))
        await onB.disconnect()

        let catalog = try b.serverCatalog()
        let row = try #require(try catalog.session(id: "s-moved"))
        #expect(row.serverID == idB && row.status == .completed, "\(row)")
        #expect(try catalog.sessionEpoch(id: "s-moved") == 1)
        let file = try #require(try catalog.recordings(sessionID: "s-moved").first)
        #expect(file.path.hasPrefix(b.dataDirectory))
        try Oracle.expectCatalogMatchesFile(file, tracks: try catalog.tracks(sessionID: "s-moved"))
        // Every sample once, every picture once and in order, across the move.
        try IngestTests().assertFile(file.path, content: content)
    }

    @Test func aSilentServersSessionWhoseAgentNeverComesBackIsFinishedFromTheCopy() async throws {
        let bucket = ObjectStoreFixture.uniqueBucket("orphan")
        let a = try await ServerFixture.with(catalog: .postgresql)
        let b = try ServerFixture()
        b.configuration.catalog = a.configuration.catalog
        b.configuration.resumeWindowSeconds = 2
        try await configure(a, bucket: bucket)
        try await configure(b, bucket: bucket)
        let portA = try await a.start()
        _ = try await b.start()
        defer { Task { await b.stop() } }
        let idB = try ServerIdentity.load(dataDirectory: b.dataDirectory)

        let content = try SessionContent.make(sessionID: "s-orphan", seconds: 3)
        let agent = try await a.connectAgent("agent-1", port: portA)
        _ = try await agent.open(content.open)
        for sample in content.samples { try await agent.send(.sample(sample)) }
        let acks = try await waitForRemoteAck(agent, atLeast: 1)
        // A and its disk are lost, and the agent never comes back.
        await agent.disconnect()
        await a.stop()
        try FileManager.default.removeItem(atPath: a.dataDirectory)

        let catalog = try b.serverCatalog()
        let row = try await eventually("B to adopt and finish the session", seconds: 60) { () -> SessionRecord? in
            try catalog.session(id: "s-orphan").flatMap { $0.serverID == idB && $0.status != .recording ? $0 : nil }
        }
        #expect(row.status == .recovered, "\(row)")
        let file = try #require(try catalog.recordings(sessionID: "s-orphan").first)
        let upload = try await eventually("the adopted recording to be uploaded") { try catalog.upload(recordingID: file.id) }
        try Oracle.expectCatalogMatchesFile(try #require(try catalog.recording(id: file.id)), tracks: try catalog.tracks(sessionID: "s-orphan"))
        let held = try Oracle.streams(file.path).map(\.packets).reduce(0, +)
        #expect(UInt64(held) >= acks.remote, "everything A acknowledged remotely is in the finished file: \(held) < \(acks.remote)")
        #expect(upload.sizeBytes > 0)
        let live = try await client(bucket: bucket).listObjects(prefix: LiveFragmentKeys.sessionPrefix("s-orphan"))
        #expect(try await eventually("the live copy to go once the file is uploaded") { () async throws -> Bool? in
            try await client(bucket: bucket).listObjects(prefix: LiveFragmentKeys.sessionPrefix("s-orphan")).isEmpty ? true : nil
        }, "\(live.count) live objects left")
    }
}

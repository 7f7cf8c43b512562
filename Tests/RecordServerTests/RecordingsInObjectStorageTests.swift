import AsyncHTTPClient
import Crypto
import Foundation
import ObjectStorage
@testable import RecordServerCore
import Shared
import Testing
import TestSupport

/// Finished recordings copied to a real S3 server (Ceph RGW, `ObjectStoreFixture`) by the
/// record-server (issue 18): the object holds the file's bytes and ffprobe reads it as the
/// recording; with `keepLocalCopy: false` the local file goes and the admin API serves the
/// object, ranges included; an upload a crash interrupted is resumed, not started again.
@Suite("Recordings in object storage", .serialized, .enabled(if: ObjectStoreFixture.enabled, "OBJECT_STORE_TESTS=1 (the test command sets it)"))
struct RecordingsInObjectStorageTests {
    static let http = HTTPClientTransport.makeHTTPClient(readTimeout: .seconds(30))

    /// A server fixture uploading to a new bucket of the shared store, with its catalog on `backend`.
    private func fixture(bucket: String, keepLocalCopy: Bool, backend: CatalogBackend) async throws -> ServerFixture {
        let store = try await ObjectStoreFixture.shared()
        let fixture = try await ServerFixture.with(catalog: backend)
        fixture.configuration.objectStore = .init(url: "s3://\(bucket)/fleet-a/?endpoint=\(store.endpoint)", accessKeyFile: store.accessKeyFile,
                                                  secretKeyFile: store.secretKeyFile, keepLocalCopy: keepLocalCopy)
        return fixture
    }

    private func client(bucket: String) async throws -> S3Client {
        let store = try await ObjectStoreFixture.shared()
        return S3Client(location: try S3Location(parsing: "s3://\(bucket)?endpoint=\(store.endpoint)"),
                        credentials: try S3Credentials.load(accessKeyFile: store.accessKeyFile, secretKeyFile: store.secretKeyFile),
                        transport: HTTPClientTransport(client: Self.http))
    }

    /// Records a 2 s session on `fixture`'s running server and returns its recording row.
    private func record(_ fixture: ServerFixture, port: Int, session: SessionID) async throws -> RecordingRecord {
        let content = try SessionContent.make(sessionID: session, seconds: 2)
        let agent = try await fixture.connectAgent("agent-1", port: port)
        _ = try await agent.open(content.open)
        for sample in content.samples { try await agent.send(.sample(sample)) }
        _ = try await agent.close(session, finalSequence: UInt64(content.samples.count))
        await agent.disconnect()
        return try #require(try fixture.serverCatalog().recordings(sessionID: session.value).first)
    }

    private func uploaded(_ fixture: ServerFixture, _ recording: RecordingRecord) async throws -> UploadRecord {
        try await eventually("recording \(recording.id) to be uploaded") { () -> UploadRecord? in
            try fixture.serverCatalog().upload(recordingID: recording.id)
        }
    }

    @Test(arguments: CatalogBackend.allCases)
    func aFinishedRecordingIsUploadedAndTheObjectIsTheFile(_ backend: CatalogBackend) async throws {
        let bucket = ObjectStoreFixture.uniqueBucket("uploads")
        let fixture = try await fixture(bucket: bucket, keepLocalCopy: true, backend: backend)
        let port = try await fixture.start()
        let recording = try await record(fixture, port: port, session: "s-up")
        let upload = try await uploaded(fixture, recording)
        await fixture.stop()

        let relative = String(recording.path.dropFirst(fixture.dataDirectory.count + 1))
        #expect(upload.objectKey == "fleet-a/" + relative, "the bucket mirrors the data directory under the prefix")
        let local = try Data(contentsOf: URL(fileURLWithPath: recording.path))
        #expect(upload.sizeBytes == Int64(local.count) && !upload.localRemoved)
        let object = try await client(bucket: bucket).getObject(key: upload.objectKey)
        #expect(SHA256.hash(data: object) == SHA256.hash(data: local), "the object holds the file's bytes")
        #expect(try await client(bucket: bucket).headObject(key: upload.objectKey).metadata["recording-id"] == recording.id)

        // Judged from the object alone, by ffprobe/ffmpeg, against the catalog.
        let scratch = try TemporaryDirectory(prefix: "from-object")
        var fromObject = recording
        fromObject.path = try scratch.file("recording.mp4", object)
        try Oracle.expectCatalogMatchesFile(fromObject, tracks: try fixture.serverCatalog().tracks(sessionID: "s-up"))
        #expect(try runTool("ffmpeg", ["-v", "error", "-i", fromObject.path, "-f", "null", "-"]).stderr.isEmpty)
    }

    @Test func withoutALocalCopyTheAPIServesTheObjectWithRangesAndDeletesIt() async throws {
        let bucket = ObjectStoreFixture.uniqueBucket("served")
        let fixture = try await fixture(bucket: bucket, keepLocalCopy: false, backend: .sqlite)
        let port = try await fixture.start()
        defer { Task { await fixture.stop() } }
        let recording = try await record(fixture, port: port, session: "s-served")
        let original = try Data(contentsOf: URL(fileURLWithPath: recording.path))
        let upload = try await eventually("the local copy to be removed") { () -> UploadRecord? in
            try fixture.serverCatalog().upload(recordingID: recording.id).flatMap { $0.localRemoved ? $0 : nil }
        }
        #expect(!FileManager.default.fileExists(atPath: recording.path))

        let api = AdminClient(port: try #require(fixture.running?.adminPort), token: ServerFixture.adminToken)
        let whole = try await api.get("/v1/recordings/\(recording.id)/file")
        #expect(whole.status == 200 && whole.body == original, "status \(whole.status), \(whole.body.count) of \(original.count) bytes")
        #expect(whole.headers["Etag"] == "\"s3-\(upload.etag)\"" || whole.headers["ETag"] == "\"s3-\(upload.etag)\"", "\(whole.headers)")
        let part = try await api.send("GET", "/v1/recordings/\(recording.id)/file", headers: ["Range": "bytes=100-1123"])
        #expect(part.status == 206 && part.body == original[100...1123], "status \(part.status), \(part.body.count) bytes")
        #expect(part.headers["Content-Range"] == "bytes 100-1123/\(original.count)")
        let tail = try await api.send("GET", "/v1/recordings/\(recording.id)/file", headers: ["Range": "bytes=-500"])
        #expect(tail.status == 206 && tail.body == original.suffix(500))

        let deleted = try await api.send("DELETE", "/v1/recordings/\(recording.id)")
        #expect(deleted.status == 204)
        let gone = await #expect(throws: S3Error.self) { _ = try await client(bucket: bucket).headObject(key: upload.objectKey) }
        #expect(gone?.status == 404)
        #expect(try fixture.serverCatalog().upload(recordingID: recording.id) == nil)
    }

    /// Retention deletes a recording's file and row; its object goes at the uploader's next
    /// pass (the upload row, left without its recording, is the to-do item).
    @Test func aRecordingRetentionDeletesLosesItsObjectToo() async throws {
        let bucket = ObjectStoreFixture.uniqueBucket("purged")
        let fixture = try await fixture(bucket: bucket, keepLocalCopy: true, backend: .sqlite)
        let port = try await fixture.start()
        defer { Task { await fixture.stop() } }
        let recording = try await record(fixture, port: port, session: "s-purged")
        let upload = try await uploaded(fixture, recording)
        #expect(try await client(bucket: bucket).headObject(key: upload.objectKey).metadata["recording-id"] == recording.id)

        // As the server's retention: its catalog, as that server (each applies it to its own).
        let asTheServer = try Catalog(path: fixture.dataDirectory + "/catalog.sqlite", serverID: try ServerIdentity.load(dataDirectory: fixture.dataDirectory))
        let deleted = try RetentionPolicy(maxAge: 0).apply(catalog: asTheServer, now: Date(), isLive: { _ in false })
        #expect(deleted.map(\.id) == [recording.id])
        #expect(!FileManager.default.fileExists(atPath: recording.path))
        try await eventually("the object of the deleted recording to be removed") { () -> Bool? in
            try fixture.serverCatalog().upload(recordingID: recording.id) == nil ? true : nil
        }
        let gone = await #expect(throws: S3Error.self) { _ = try await client(bucket: bucket).headObject(key: upload.objectKey) }
        #expect(gone?.status == 404)
    }

    @Test func anUploadACrashInterruptedIsResumedNotStartedAgain() async throws {
        let bucket = ObjectStoreFixture.uniqueBucket("resumed")
        let fixture = try await fixture(bucket: bucket, keepLocalCopy: true, backend: .sqlite)
        let store = fixture.configuration.objectStore
        fixture.configuration.objectStore = nil
        var port = try await fixture.start()
        let recording = try await record(fixture, port: port, session: "s-crash")
        await fixture.stop()

        // What a server killed mid-upload leaves: an upload begun, its first part stored.
        let s3 = try await client(bucket: bucket)
        try await s3.createBucket()
        let key = "fleet-a/" + String(recording.path.dropFirst(fixture.dataDirectory.count + 1))
        let size = Int64(try Data(contentsOf: URL(fileURLWithPath: recording.path)).count)
        let uploadID = try await s3.createMultipartUpload(key: key, contentType: "video/mp4")
        _ = try await s3.uploadPart(key: key, uploadID: uploadID, partNumber: 1, path: recording.path, range: 0..<size)

        fixture.configuration.objectStore = store
        port = try await fixture.start()
        let upload = try await uploaded(fixture, recording)
        await fixture.stop()
        #expect(try await s3.listMultipartUploads(prefix: key).isEmpty, "the interrupted upload was completed, not left beside a new one")
        #expect(upload.etag.hasSuffix("-1") && upload.sizeBytes == size)
        let object = try await s3.getObject(key: key)
        #expect(SHA256.hash(data: object) == SHA256.hash(data: try Data(contentsOf: URL(fileURLWithPath: recording.path))))
        _ = port
    }
}

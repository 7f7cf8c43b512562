import AsyncHTTPClient
import Foundation
import Testing
import TestSupport
@testable import ObjectStorage

/// The single-request operations against a real RADOS Gateway (scripts/object-store.sh).
@Suite("S3 against RGW: objects", .serialized, .enabled(if: ObjectStoreFixture.enabled, "needs OBJECT_STORE_TESTS=1 (scripts/test.sh sets it and installs Ceph's RGW)"))
struct RGWObjectTests {
    @Test("Bucket, PUT with metadata, HEAD, GET, Range GETs, DELETE; missing objects are typed errors")
    func objectRoundTrip() async throws {
        let client = try await RGW.client(bucket: "objects")
        // Creating it again is fine (BucketAlreadyOwnedByYou, or 200).
        try await client.createBucket()

        let bytes = Array("0123456789abcdefghij".utf8)
        let etag = try await client.putObject(key: "cam-a/take 1+2.txt", bytes: bytes, contentType: "text/plain",
                                              metadata: ["Camera": "front", "session": "s-0001"])
        #expect(etag == PartDigest(of: bytes).md5Hex)

        let info = try await client.headObject(key: "cam-a/take 1+2.txt")
        #expect(info == S3ObjectInfo(size: 20, etag: etag, metadata: ["camera": "front", "session": "s-0001"], contentType: "text/plain"))

        #expect(try await client.getObject(key: "cam-a/take 1+2.txt") == bytes)
        #expect(try await client.getObject(key: "cam-a/take 1+2.txt", range: .bytes(2...5)) == Array("2345".utf8))
        #expect(try await client.getObject(key: "cam-a/take 1+2.txt", range: .from(17)) == Array("hij".utf8))
        #expect(try await client.getObject(key: "cam-a/take 1+2.txt", range: .suffix(4)) == Array("ghij".utf8))
        await #expect(throws: S3Error.self) { try await client.getObject(key: "cam-a/take 1+2.txt", maximumBytes: 10) }

        try await client.deleteObject(key: "cam-a/take 1+2.txt")
        // Deleting what is gone succeeds, as in S3.
        try await client.deleteObject(key: "cam-a/take 1+2.txt")

        let head = await #expect(throws: S3Error.self) { try await client.headObject(key: "cam-a/take 1+2.txt") }
        #expect(head?.status == 404 && head?.code == "NotFound" && head?.method == "HEAD")
        let get = await #expect(throws: S3Error.self) { try await client.getObject(key: "cam-a/take 1+2.txt") }
        #expect(get?.kind == .server && get?.status == 404 && get?.code == "NoSuchKey")
        #expect(get?.key == "cam-a/take 1+2.txt" && get?.bucket == client.location.bucket)
        #expect(get?.requestID?.isEmpty == false, "RGW's request id is kept: \(String(describing: get))")
    }

    @Test("ListObjectsV2 follows continuation tokens; keys that need encoding come back as they were")
    func listing() async throws {
        var client = try await RGW.client(bucket: "listing")
        client.limits.listPageSize = 2
        let keys = ["rec/a.mp4", "rec/b c+d%e.mp4", "rec/über/ü.mp4", "rec/x&y<z>.mp4", "rec/z.mp4"]
        for (index, key) in keys.enumerated() { try await client.putObject(key: key, bytes: [UInt8](repeating: 7, count: index)) }
        try await client.putObject(key: "other/a.mp4", bytes: [1])

        let first = try await client.listObjectsPage(prefix: "rec/")
        #expect(first.objects.count == 2 && first.nextContinuationToken != nil)
        let listed = try await client.listObjects(prefix: "rec/")
        #expect(listed.map(\.key) == keys.sorted())
        #expect(listed.map(\.size) == keys.sorted().map { Int64(keys.firstIndex(of: $0)!) })
        #expect(try await client.listObjects(prefix: "nothing/").isEmpty)
        #expect(try await client.listObjects().count == 6)
    }

    @Test("A wrong secret key is refused with SignatureDoesNotMatch; a missing bucket with NoSuchBucket")
    func refusals() async throws {
        let store = try await ObjectStoreFixture.shared()
        let good = try RGW.client(store, bucket: ObjectStoreFixture.uniqueBucket("refusals"))
        try await good.createBucket()
        let location = good.location
        let wrong = S3Client(location: location, credentials: S3Credentials(accessKeyID: good.signer.credentials.accessKeyID, secretAccessKey: "wrong"),
                             transport: HTTPClientTransport(client: RGW.httpClient))
        let signature = await #expect(throws: S3Error.self) { try await wrong.putObject(key: "k", bytes: [1]) }
        #expect(signature?.status == 403 && signature?.code == "SignatureDoesNotMatch")
        #expect(signature?.isRetryable == false)

        let missing = try RGW.client(store, bucket: ObjectStoreFixture.uniqueBucket("missing"))
        let noBucket = await #expect(throws: S3Error.self) { try await missing.listObjects() }
        #expect(noBucket?.status == 404 && noBucket?.code == "NoSuchBucket")
    }

    @Test("A presigned GET works without credentials until it expires, then it is refused with 403")
    func presigned() async throws {
        let client = try await RGW.client(bucket: "presigned")
        let bytes = (0..<1000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        try await client.putObject(key: "share/clip.mp4", bytes: bytes)

        func fetch(_ url: String) async throws -> (status: Int, body: [UInt8]) {
            let response = try await RGW.httpClient.execute(HTTPClientRequest(url: url), timeout: .seconds(10))
            return (Int(response.status.code), Array(try await response.body.collect(upTo: 1 << 20).readableBytesView))
        }
        let url = client.presignedGetURL(key: "share/clip.mp4", expires: 60)
        #expect(url.contains("X-Amz-Signature=") && url.contains("X-Amz-Expires=60"))
        let fresh = try await fetch(url)
        #expect(fresh.status == 200 && fresh.body == bytes)

        // Signed two minutes ago for one minute: expired (an injected date, no waiting).
        let expired = try await fetch(client.presignedGetURL(key: "share/clip.mp4", expires: 60, at: Date().addingTimeInterval(-120)))
        #expect(expired.status == 403, "\(String(decoding: expired.body, as: UTF8.self))")
        #expect(String(decoding: expired.body, as: UTF8.self).contains("AccessDenied"))

        // The signature covers the key: the same query on another key is refused.
        try await client.putObject(key: "share/other.mp4", bytes: [1])
        let moved = try await fetch(url.replacingOccurrences(of: "clip.mp4", with: "other.mp4"))
        #expect(moved.status == 403)
    }
}

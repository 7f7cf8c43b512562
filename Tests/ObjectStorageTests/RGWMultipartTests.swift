import Foundation
import Testing
import TestSupport
@testable import ObjectStorage

/// Multipart uploads against a real RADOS Gateway: whole files, resumed after a crash, damaged
/// parts, retried parts. Every uploaded object is read back and compared by SHA-256.
@Suite("S3 against RGW: multipart", .serialized, .enabled(if: ObjectStoreFixture.enabled, "needs OBJECT_STORE_TESTS=1 (scripts/test.sh sets it and installs Ceph's RGW)"))
struct RGWMultipartTests {
    static let mib: Int64 = 1 << 20

    @Test("A 23 MiB file in 5 MiB parts reads back byte-identical; the ETag is the one computed from the file")
    func uploadFile() async throws {
        let client = try await RGW.client(bucket: "multipart")
        let dir = try TemporaryDirectory(prefix: "s3-multipart")
        let file = try RGW.randomFile(in: dir, name: "rec.mp4", size: Int(23 * Self.mib + 123), seed: 1)

        let result = try await client.uploadFile(path: file.path, key: "cam-a/rec.mp4", partSize: 5 * Self.mib, metadata: ["session": "s-1"],
                                                 contentType: "video/mp4")
        #expect(result.partCount == 5 && result.partsUploaded == 5 && result.partsAlreadyStored == 0 && result.retries == 0)
        #expect(result.size == 23 * Self.mib + 123)
        #expect(result.etag.hasSuffix("-5"))

        let info = try await client.headObject(key: "cam-a/rec.mp4")
        #expect(info.size == result.size && info.etag == result.etag && info.metadata == ["session": "s-1"] && info.contentType == "video/mp4")
        let stored = try await RGW.sha256(of: "cam-a/rec.mp4", client)
        #expect(stored.size == result.size)
        #expect(stored.sha256 == file.sha256)
        #expect(try await client.listMultipartUploads(prefix: "cam-a/").isEmpty, "a completed upload is no longer listed")
    }

    @Test("An upload interrupted after 2 of 5 parts is found, resumed without re-sending those parts, and completes byte-identical")
    func resumeAfterCrash() async throws {
        let store = try await ObjectStoreFixture.shared()
        let bucket = ObjectStoreFixture.uniqueBucket("resume")
        let dir = try TemporaryDirectory(prefix: "s3-resume")
        let file = try RGW.randomFile(in: dir, name: "rec.mp4", size: Int(22 * Self.mib), seed: 2)

        // The first process: every request after the second part's fails, and nothing is retried
        // — as if the process died there. Its client is then dropped.
        let partsSent = NSLock()
        nonisolated(unsafe) var parts = 0
        let crashing = RecordingTransport { line in
            partsSent.withLock {
                if parts >= 2 { return true }
                if line.hasPrefix("PUT ") && line.contains("partNumber=") { parts += 1 }
                return false
            }
        }
        do {
            let first = try RGW.client(store, bucket: bucket, transport: crashing)
            try await first.createBucket()
            let crash = await #expect(throws: S3Error.self) {
                try await first.uploadFile(path: file.path, key: "cam-b/rec.mp4", partSize: 5 * Self.mib, concurrency: 1,
                                           retry: S3RetryPolicy(maximumAttempts: 1))
            }
            #expect(crash?.kind == .transport)
            #expect(crashing.uploadedPartNumbers == [1, 2, 3])
        }

        // The next process: finds the upload by its key, and what the server holds of it.
        let recording = RecordingTransport()
        let second = try RGW.client(store, bucket: bucket, transport: recording)
        let interrupted = try #require(try await second.findInterruptedUpload(key: "cam-b/rec.mp4"))
        let stored = try await second.listParts(key: "cam-b/rec.mp4", uploadID: interrupted.uploadID)
        #expect(stored.map(\.partNumber) == [1, 2])
        #expect(stored.map(\.size) == [5 * Self.mib, 5 * Self.mib])

        let result = try await second.uploadFile(path: file.path, key: "cam-b/rec.mp4", partSize: 5 * Self.mib,
                                                 resumeUploadID: interrupted.uploadID)
        #expect(result.uploadID == interrupted.uploadID)
        #expect(result.partsAlreadyStored == 2 && result.partsUploaded == 3 && result.partCount == 5)
        #expect(recording.uploadedPartNumbers.sorted() == [3, 4, 5], "parts 1 and 2 are not sent again: \(recording.requests)")

        let read = try await RGW.sha256(of: "cam-b/rec.mp4", second)
        #expect(read.sha256 == file.sha256 && read.size == 22 * Self.mib)
        #expect(try await second.findInterruptedUpload(key: "cam-b/rec.mp4") == nil)
    }

    @Test("A part whose Content-MD5 or payload SHA-256 does not match its bytes is refused by the server")
    func damagedPart() async throws {
        let client = try await RGW.client(bucket: "damaged")
        let dir = try TemporaryDirectory(prefix: "s3-damaged")
        let path = try RGW.randomFile(in: dir, name: "part", size: Int(5 * Self.mib), seed: 3).path
        let file = try ReadOnlyFile(path: path)
        let range: Range<Int64> = 0..<(5 * Self.mib)
        let digest = try await PartDigest.of(file, range: range)
        let uploadID = try await client.createMultipartUpload(key: "damaged.mp4")

        var wrongMD5 = digest
        wrongMD5.md5[0] ^= 1
        let md5Error = await #expect(throws: S3Error.self) {
            try await client.uploadPart(key: "damaged.mp4", uploadID: uploadID, partNumber: 1, file: file, range: range, digest: wrongMD5)
        }
        #expect(md5Error?.kind == .server && md5Error?.status == 400 && md5Error?.code == "BadDigest", "\(String(describing: md5Error))")

        var wrongSHA = digest
        wrongSHA.sha256[0] ^= 1
        let shaError = await #expect(throws: S3Error.self) {
            try await client.uploadPart(key: "damaged.mp4", uploadID: uploadID, partNumber: 1, file: file, range: range, digest: wrongSHA)
        }
        #expect(shaError?.kind == .server && shaError?.status == 400 && shaError?.code == "XAmzContentSHA256Mismatch", "\(String(describing: shaError))")

        #expect(try await client.listParts(key: "damaged.mp4", uploadID: uploadID).isEmpty, "no damaged part was stored")
        try await client.uploadPart(key: "damaged.mp4", uploadID: uploadID, partNumber: 1, path: path, range: range)
        #expect(try await client.listParts(key: "damaged.mp4", uploadID: uploadID).map(\.etag) == [digest.md5Hex])
        try await client.abortMultipartUpload(key: "damaged.mp4", uploadID: uploadID)
        #expect(try await client.findInterruptedUpload(key: "damaged.mp4") == nil)
    }

    @Test("A part that fails once is sent again after the backoff; other failures are not retried")
    func retriedPart() async throws {
        let failedOnce = NSLock()
        nonisolated(unsafe) var failed = false
        let transport = RecordingTransport { line in
            failedOnce.withLock {
                guard !failed, line.hasPrefix("PUT "), line.contains("partNumber=2&") else { return false }
                failed = true
                return true
            }
        }
        let sleeps = RecordedSleeps()
        let client = try await RGW.client(bucket: "retry", transport: transport, sleep: sleeps.sleep)
        let dir = try TemporaryDirectory(prefix: "s3-retry")
        let file = try RGW.randomFile(in: dir, name: "rec.mp4", size: Int(11 * Self.mib), seed: 4)
        let policy = S3RetryPolicy(maximumAttempts: 3, initialDelay: .milliseconds(250), maximumDelay: .seconds(5))

        let result = try await client.uploadFile(path: file.path, key: "rec.mp4", partSize: 5 * Self.mib, concurrency: 1, retry: policy)
        #expect(result.retries == 1 && result.partsUploaded == 3)
        #expect(transport.uploadedPartNumbers == [1, 2, 2, 3])
        #expect(sleeps.all == [.milliseconds(250)])
        #expect(try await RGW.sha256(of: "rec.mp4", client).sha256 == file.sha256)

        // A refusal is final: a wrong upload id is not tried again (RGW says NoSuchKey where AWS says NoSuchUpload).
        let refused = await #expect(throws: S3Error.self) {
            try await client.uploadFile(path: file.path, key: "rec.mp4", partSize: 5 * Self.mib, resumeUploadID: "no-such-upload", retry: policy)
        }
        #expect(refused?.isMissingUpload == true && sleeps.all.count == 1, "\(String(describing: refused))")
    }
}

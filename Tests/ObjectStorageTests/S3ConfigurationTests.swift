import Foundation
import Testing
import TestSupport
@testable import ObjectStorage

@Suite("S3 location and credentials")
struct S3ConfigurationTests {
    @Test("s3://BUCKET?endpoint=…&region=…: path-style endpoint, default region and port, key prefix")
    func parsesLocations() throws {
        let plain = try S3Location(parsing: "s3://recordings?endpoint=http://127.0.0.1:7480&region=eu-west-1")
        #expect(plain == S3Location(bucket: "recordings", endpoint: .init(scheme: "http", host: "127.0.0.1", port: 7480), region: "eu-west-1"))
        #expect(plain.endpoint.hostHeader == "127.0.0.1:7480")

        let defaults = try S3Location(parsing: "s3://rec.backup?endpoint=https://s3.example.test")
        #expect(defaults.region == "us-east-1")
        #expect(defaults.endpoint == .init(scheme: "https", host: "s3.example.test", port: 443))
        // The default port is left out of the Host header, as clients send it (and sign it).
        #expect(defaults.endpoint.hostHeader == "s3.example.test")
        #expect(defaults.endpoint.url == "https://s3.example.test")

        let prefixed = try S3Location(parsing: "s3://rec/studio-a/cams?endpoint=http://[::1]:9000")
        #expect(prefixed.keyPrefix == "studio-a/cams/")
        #expect(prefixed.endpoint.host == "::1")
        #expect(prefixed.endpoint.hostHeader == "[::1]:9000")
    }

    @Test("Mistakes in the location name the problem and the fix", arguments: [
        ("http://rec?endpoint=http://h", S3ConfigurationError.notAnS3URL("http://rec?endpoint=http://h")),
        ("s3://?endpoint=http://h", .missingBucket("s3://?endpoint=http://h")),
        ("s3://Recordings?endpoint=http://h", .invalidBucketName("Recordings")),
        ("s3://ab?endpoint=http://h", .invalidBucketName("ab")),
        ("s3://-rec?endpoint=http://h", .invalidBucketName("-rec")),
        ("s3://rec", .missingEndpoint("s3://rec")),
        ("s3://rec?endpoint=", .missingEndpoint("s3://rec?endpoint=")),
        ("s3://rec?endpoint=ftp://h", .invalidEndpoint("ftp://h", "it must start with http:// or https://")),
        ("s3://rec?endpoint=http://h/rec", .invalidEndpoint("http://h/rec", "it must be only scheme://host[:port] (the bucket goes after s3://)")),
        ("s3://rec?endpoint=http://h&region=", .invalidRegion("")),
        ("s3://rec?endpoint=http://h&style=virtual", .unknownParameter("style")),
    ])
    func refusesLocations(text: String, expected: S3ConfigurationError) {
        #expect(throws: expected) { try S3Location(parsing: text) }
    }

    @Test("Error messages say how to write it")
    func messages() {
        #expect(S3ConfigurationError.missingEndpoint("s3://rec").description
            == "'s3://rec' has no endpoint; add ?endpoint=http://HOST:PORT (the S3 server's URL)")
        #expect(S3ConfigurationError.invalidBucketName("Rec").description.contains("3-63 lower-case letters"))
    }

    @Test("Credentials from two files, trimmed; a missing, empty or wrong file is named with the fix")
    func credentials() throws {
        let dir = try TemporaryDirectory(prefix: "s3-credentials")
        let access = try dir.write("  AKIAEXAMPLE123\n", to: "access-key")
        let secret = try dir.write("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY\r\n", to: "secret-key")
        #expect(try S3Credentials.load(accessKeyFile: access, secretKeyFile: secret)
            == S3Credentials(accessKeyID: "AKIAEXAMPLE123", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"))

        let missing = dir.file("nope")
        #expect(throws: S3ConfigurationError.credentialsFile(missing, what: "access key ID", problem: "it does not exist")) {
            try S3Credentials.load(accessKeyFile: missing, secretKeyFile: secret)
        }
        let empty = try dir.write(" \n", to: "empty")
        #expect(throws: S3ConfigurationError.credentialsFile(empty, what: "secret key", problem: "it is empty; write the secret key into it")) {
            try S3Credentials.load(accessKeyFile: access, secretKeyFile: empty)
        }
        let two = try dir.write("AKIA1\nAKIA2\n", to: "two")
        #expect(throws: S3ConfigurationError.credentialsFile(two, what: "access key ID", problem: "it holds more than one word; it must hold the access key ID alone")) {
            try S3Credentials.load(accessKeyFile: two, secretKeyFile: secret)
        }
        let large = try dir.file("large", [UInt8](repeating: 65, count: 5000))
        #expect(throws: S3ConfigurationError.self) { try S3Credentials.load(accessKeyFile: large, secretKeyFile: secret) }
        #expect(throws: S3ConfigurationError.self) { try S3Credentials.load(accessKeyFile: dir.path, secretKeyFile: secret) }
        #expect(S3ConfigurationError.credentialsFile("/etc/x", what: "secret key", problem: "it does not exist").description
            == "S3 secret key file /etc/x: it does not exist")
    }
}

@Suite("Multipart planning and retries")
struct MultipartPlanTests {
    @Test("Parts of partSize bytes, the last one what is left; an empty file is one empty part")
    func plans() throws {
        let mib: Int64 = 1 << 20
        let plan = try MultipartPlan(fileSize: 23 * mib + 5, partSize: 5 * mib)
        #expect(plan.count == 5)
        #expect(plan.parts.map(\.size) == [5 * mib, 5 * mib, 5 * mib, 5 * mib, 3 * mib + 5])
        #expect(plan.parts.map(\.number) == [1, 2, 3, 4, 5])
        #expect(plan.part(5).range == 20 * mib..<(23 * mib + 5))
        #expect(plan.parts.last!.range.upperBound == plan.fileSize)

        #expect(try MultipartPlan(fileSize: 10 * mib, partSize: 5 * mib).parts.map(\.size) == [5 * mib, 5 * mib])
        #expect(try MultipartPlan(fileSize: 1, partSize: 5 * mib).parts.map(\.range) == [0..<1])
        #expect(try MultipartPlan(fileSize: 0, partSize: 5 * mib).parts.map(\.range) == [0..<0])
    }

    @Test("S3's limits: parts of 5 MiB to 5 GiB, at most 10 000 of them (the error says which size fits)")
    func limits() throws {
        let mib: Int64 = 1 << 20
        #expect(throws: MultipartPlan.PlanError.partSizeOutOfRange(5 * mib - 1)) { try MultipartPlan(fileSize: 1, partSize: 5 * mib - 1) }
        #expect(throws: MultipartPlan.PlanError.partSizeOutOfRange(5 << 30 + 1)) { try MultipartPlan(fileSize: 1, partSize: 5 << 30 + 1) }
        #expect(try MultipartPlan(fileSize: 10_000 * 5 * mib, partSize: 5 * mib).count == 10_000)
        #expect(throws: MultipartPlan.PlanError.tooManyParts(fileSize: 10_000 * 5 * mib + 1, partSize: 5 * mib)) {
            try MultipartPlan(fileSize: 10_000 * 5 * mib + 1, partSize: 5 * mib)
        }
        #expect(MultipartPlan.smallestPartSize(for: 10_000 * 5 * mib + 1) == 6 * mib)
        #expect(MultipartPlan.smallestPartSize(for: 100) == 5 * mib)
    }

    @Test("The multipart ETag: MD5 of the parts' MD5s, -N (values from Python's hashlib)")
    func multipartETag() async throws {
        let size = 12 << 20 + 3
        let bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ ($0 >> 11)) }
        let dir = try TemporaryDirectory(prefix: "etag")
        let file = try ReadOnlyFile(path: try dir.file("data", bytes))
        let plan = try MultipartPlan(fileSize: Int64(size), partSize: 5 << 20)
        var md5s: [[UInt8]] = []
        for part in plan.parts {
            let digest = try await PartDigest.of(file, range: part.range)
            #expect(digest == PartDigest(of: bytes[Int(part.range.lowerBound)..<Int(part.range.upperBound)]))
            md5s.append(digest.md5)
        }
        #expect(MultipartPlan.multipartETag(partMD5s: md5s) == "3d4d19a3376149f7093a8f869b7d80e3-3")
        #expect(MultipartPlan.multipartETag(partMD5s: [PartDigest(of: [UInt8]()).md5]) == "59adb24ef3cdbe0297f05b395827453f-1")
    }

    @Test("Reading past the end of a file that shrank is an error, not a short part")
    func shrunkFile() async throws {
        let dir = try TemporaryDirectory(prefix: "shrink")
        let file = try ReadOnlyFile(path: try dir.file("data", [1, 2, 3]))
        await #expect(throws: S3FileError.self) { try await PartDigest.of(file, range: 0..<4) }
    }

    @Test("Backoff doubles from the initial delay up to the maximum")
    func backoff() {
        let policy = S3RetryPolicy(maximumAttempts: 6, initialDelay: .milliseconds(500), maximumDelay: .seconds(3))
        #expect((1...6).map(policy.delay(afterAttempt:)) == [.milliseconds(500), .seconds(1), .seconds(2), .seconds(3), .seconds(3), .seconds(3)])
    }

    @Test("What is retried: no answer, 5xx, throttling, a damaged body; not a refusal")
    func retryable() {
        func error(_ kind: S3Error.Kind, _ status: Int? = nil, _ code: String? = nil) -> S3Error {
            S3Error(kind: kind, method: "PUT", bucket: "b", key: "k", status: status, code: code, message: "")
        }
        #expect(error(.transport).isRetryable)
        #expect(error(.server, 500, "InternalError").isRetryable)
        #expect(error(.server, 503, "SlowDown").isRetryable)
        #expect(error(.server, 400, "BadDigest").isRetryable)
        #expect(error(.server, 400, "RequestTimeout").isRetryable)
        #expect(!error(.server, 403, "SignatureDoesNotMatch").isRetryable)
        #expect(!error(.server, 404, "NoSuchUpload").isRetryable)
        #expect(!error(.verificationFailed).isRetryable)
        #expect(!error(.localFile).isRetryable)
        #expect(!error(.cancelled).isRetryable)
        #expect(error(.server, 404, "NoSuchKey").description == "S3 PUT s3://b/k failed: HTTP 404 NoSuchKey")
    }
}

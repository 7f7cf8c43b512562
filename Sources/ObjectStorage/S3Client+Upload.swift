import Foundation
import NIOConcurrencyHelpers

/// How often and how patiently a request is tried again: attempt `n` (from 1) that fails with a
/// retryable ``S3Error`` waits `initialDelay · 2^(n-1)`, at most `maximumDelay`, before the next.
public struct S3RetryPolicy: Sendable, Equatable {
    public var maximumAttempts: Int
    public var initialDelay: Duration
    public var maximumDelay: Duration

    public init(maximumAttempts: Int = 5, initialDelay: Duration = .milliseconds(500), maximumDelay: Duration = .seconds(20)) {
        precondition(maximumAttempts >= 1)
        self.maximumAttempts = maximumAttempts
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
    }

    /// The wait after failed attempt `attempt` (1-based).
    public func delay(afterAttempt attempt: Int) -> Duration {
        var delay = initialDelay
        for _ in 1..<max(1, attempt) {
            delay *= 2
            if delay >= maximumDelay { return maximumDelay }
        }
        return min(delay, maximumDelay)
    }
}

/// What ``S3Client/uploadFile(path:key:partSize:metadata:contentType:resumeUploadID:concurrency:retry:)`` did.
public struct S3UploadResult: Sendable, Equatable {
    public var key: String
    public var uploadID: String
    /// The object's ETag, checked: the MD5 of the parts' MD5s computed from the file, `-N`.
    public var etag: String
    public var size: Int64
    public var partCount: Int
    /// Parts sent by this call.
    public var partsUploaded: Int
    /// Parts a resumed upload already had (same size, same MD5), not sent again.
    public var partsAlreadyStored: Int
    /// Requests that failed and were tried again.
    public var retries: Int
}

extension S3Client {
    /// Uploads the file at `path` as `key` in a multipart upload streamed from the file (one
    /// chunk per part in flight in memory), `concurrency` parts at a time, each tried again with
    /// exponential backoff per `retry`. With `resumeUploadID` (see ``findInterruptedUpload(key:)``)
    /// it continues that upload: parts the server already has with this file's bytes (same size
    /// and MD5) are not sent again. Afterwards it checks the object with HEAD: its size, and its
    /// ETag against the multipart ETag computed from the file's parts.
    ///
    /// Verification is by the multipart ETag, not a checksum of the whole file: RGW 16 (Debian 12)
    /// supports neither `x-amz-checksum-*` nor a composite checksum, while every S3 server makes
    /// the multipart ETag from the part MD5s it checked on arrival, so it covers every byte
    /// without a second pass over the file or trusting metadata we wrote ourselves. (AWS with
    /// SSE-KMS or SSE-C encryption makes ETags that are not MD5s; this client does not ask for those.)
    ///
    /// A failure leaves the upload in place, to be resumed (or aborted by the caller).
    public func uploadFile(path: String, key: String, partSize: Int64 = 8 << 20, metadata: [String: String] = [:],
                           contentType: String? = nil, resumeUploadID: String? = nil, concurrency: Int = 4,
                           retry: S3RetryPolicy = S3RetryPolicy()) async throws(S3Error) -> S3UploadResult {
        let operation = Operation(method: .PUT, key: key)
        let file: ReadOnlyFile
        let plan: MultipartPlan
        do {
            file = try ReadOnlyFile(path: path)
            plan = try MultipartPlan(fileSize: try file.size(), partSize: partSize)
        } catch let planError as MultipartPlan.PlanError {
            throw error(.invalidRequest, operation, message: planError.description)
        } catch {
            throw self.error(.localFile, operation, message: String(describing: error))
        }
        let retries = RetryCounter()

        let uploadID: String
        var stored: [Int: S3UploadedPart] = [:]
        if let resumeUploadID {
            uploadID = resumeUploadID
            let parts = try await withRetries(retry, retries) { () async throws(S3Error) in try await listParts(key: key, uploadID: resumeUploadID) }
            for part in parts { stored[part.partNumber] = part }
        } else {
            uploadID = try await withRetries(retry, retries) { () async throws(S3Error) in
                try await createMultipartUpload(key: key, contentType: contentType, metadata: metadata)
            }
        }

        let outcomes = try await uploadParts(plan, of: file, key: key, uploadID: uploadID, stored: stored, concurrency: concurrency,
                                             retry: retry, retries: retries)
        // A file that grew while it was read would be stored without its end.
        let sizeNow: Int64
        do {
            sizeNow = try file.size()
        } catch {
            throw self.error(.localFile, operation, message: error.description)
        }
        guard sizeNow == plan.fileSize else {
            throw error(.localFile, operation, message: "\(path) changed size from \(plan.fileSize) to \(sizeNow) bytes while it was uploaded")
        }

        let expectedETag = MultipartPlan.multipartETag(partMD5s: outcomes.map(\.digest.md5))
        let parts = outcomes.map { (partNumber: $0.number, etag: $0.etag) }
        do {
            _ = try await withRetries(retry, retries) { () async throws(S3Error) in
                try await completeMultipartUpload(key: key, uploadID: uploadID, parts: parts)
            }
        } catch where error.isMissingUpload && retries.count > 0 {
            // A retried complete whose first attempt went through (its answer lost): the HEAD
            // below tells whether the object is this file.
        }

        let info = try await withRetries(retry, retries) { () async throws(S3Error) in try await headObject(key: key) }
        guard info.size == plan.fileSize, info.etag == expectedETag else {
            throw error(.verificationFailed, operation,
                        message: "stored \(info.size) bytes with ETag \(info.etag); the file has \(plan.fileSize) bytes and its parts make ETag \(expectedETag)")
        }
        let uploaded = outcomes.filter(\.uploaded).count
        return S3UploadResult(key: key, uploadID: uploadID, etag: info.etag, size: plan.fileSize, partCount: plan.count,
                              partsUploaded: uploaded, partsAlreadyStored: plan.count - uploaded, retries: retries.count)
    }

    /// The latest multipart upload of exactly `key` that was neither completed nor aborted (an
    /// upload interrupted by a crash), to pass to `uploadFile(resumeUploadID:)`.
    public func findInterruptedUpload(key: String) async throws(S3Error) -> S3MultipartUpload? {
        try await listMultipartUploads(prefix: key).filter { $0.key == key }.max { $0.initiated < $1.initiated }
    }

    // MARK: Parts

    struct PartOutcome: Sendable {
        var number: Int
        var digest: PartDigest
        var etag: String
        var uploaded: Bool
    }

    /// Every part of `plan`, `concurrency` at a time, in part order.
    private func uploadParts(_ plan: MultipartPlan, of file: ReadOnlyFile, key: String, uploadID: String, stored: [Int: S3UploadedPart],
                             concurrency: Int, retry: S3RetryPolicy, retries: RetryCounter) async throws(S3Error) -> [PartOutcome] {
        do {
            return try await withThrowingTaskGroup(of: PartOutcome.self) { group in
                var outcomes: [PartOutcome] = []
                var inFlight = 0
                for part in plan.parts {
                    if inFlight == max(1, concurrency), let outcome = try await group.next() {
                        outcomes.append(outcome)
                        inFlight -= 1
                    }
                    group.addTask {
                        try await uploadPart(part, of: file, key: key, uploadID: uploadID, stored: stored[part.number], retry: retry, retries: retries)
                    }
                    inFlight += 1
                }
                for try await outcome in group { outcomes.append(outcome) }
                return outcomes.sorted { $0.number < $1.number }
            }
        } catch let error as S3Error {
            throw error
        } catch {
            throw self.error(.transport, Operation(method: .PUT, key: key), message: String(describing: error))
        }
    }

    /// One part: hashed from the file, skipped when the server already has these bytes, else sent
    /// (read from the file again on every attempt).
    private func uploadPart(_ part: MultipartPlan.Part, of file: ReadOnlyFile, key: String, uploadID: String, stored: S3UploadedPart?,
                            retry: S3RetryPolicy, retries: RetryCounter) async throws(S3Error) -> PartOutcome {
        let digest: PartDigest
        do {
            digest = try await PartDigest.of(file, range: part.range)
        } catch {
            throw self.error(.localFile, Operation(method: .PUT, key: key), message: String(describing: error))
        }
        if let stored, stored.size == part.size, stored.etag == digest.md5Hex {
            return PartOutcome(number: part.number, digest: digest, etag: stored.etag, uploaded: false)
        }
        let etag = try await withRetries(retry, retries) { () async throws(S3Error) in
            try await uploadPart(key: key, uploadID: uploadID, partNumber: part.number, file: file, range: part.range, digest: digest)
        }
        return PartOutcome(number: part.number, digest: digest, etag: etag, uploaded: true)
    }

    /// Runs `body` until it succeeds, fails with an error that is not retryable, or has failed
    /// `policy.maximumAttempts` times; sleeps with the injected sleep in between.
    func withRetries<T>(_ policy: S3RetryPolicy, _ counter: RetryCounter, _ body: () async throws(S3Error) -> T) async throws(S3Error) -> T {
        var attempt = 1
        while true {
            do {
                return try await body()
            } catch {
                guard error.isRetryable, attempt < policy.maximumAttempts, !Task.isCancelled else { throw error }
                counter.increment()
                do {
                    try await sleep(policy.delay(afterAttempt: attempt))
                } catch {
                    throw S3Error(kind: .cancelled, method: "PUT", bucket: location.bucket, key: nil, message: "cancelled while waiting to retry")
                }
                attempt += 1
            }
        }
    }
}

/// Retries counted across the parts uploaded at once.
final class RetryCounter: Sendable {
    private let value = NIOLockedValueBox(0)
    var count: Int { value.withLockedValue { $0 } }
    func increment() { value.withLockedValue { $0 += 1 } }
}

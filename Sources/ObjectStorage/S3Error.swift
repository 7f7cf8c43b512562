/// A failed S3 operation: which request (method, bucket, key), what the server said (HTTP
/// status, S3's error `Code` and `Message`, its request id, for the server's own log), or what
/// went wrong on the way. Equal by ``kind`` and ``code`` in tests via those fields.
public struct S3Error: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The server answered with an error status (or, for CompleteMultipartUpload, an error
        /// document under 200): ``status`` and ``code`` say which.
        case server
        /// No answer: connection refused or reset, timeout.
        case transport
        /// An answer that is not what S3 sends (XML that does not parse, a missing field).
        case malformedResponse
        /// An answer over the size this client reads for it (``S3Client/Limits``).
        case responseTooLarge
        /// The object is there but is not what was uploaded (size or ETag differ).
        case verificationFailed
        /// The local file could not be read, or changed size while it was uploaded.
        case localFile
        /// The request cannot be made as asked (a part too small, too many parts).
        case invalidRequest
        /// The task was cancelled.
        case cancelled
    }

    public var kind: Kind
    public var method: String
    public var bucket: String
    public var key: String?
    /// The HTTP status, when the server answered.
    public var status: Int?
    /// S3's error code (`NoSuchKey`, `BadDigest`, `SignatureDoesNotMatch`, …); for a HEAD, whose
    /// error has no body, one derived from the status (`NotFound`, `Forbidden`).
    public var code: String?
    /// S3's message, or this client's diagnosis.
    public var message: String
    /// `x-amz-request-id`, to find the request in the server's log.
    public var requestID: String?

    public init(kind: Kind, method: String, bucket: String, key: String?, status: Int? = nil, code: String? = nil,
                message: String, requestID: String? = nil) {
        self.kind = kind
        self.method = method
        self.bucket = bucket
        self.key = key
        self.status = status
        self.code = code
        self.message = message
        self.requestID = requestID
    }

    /// Whether the same request may succeed if sent again: no answer, the server's own trouble
    /// (5xx, throttling), or a body that arrived damaged (the digest S3 computed differs from the
    /// one sent: the part is read from the file again for the next attempt, so a file that really
    /// changed fails every attempt and is reported).
    public var isRetryable: Bool {
        switch kind {
        case .transport: return true
        case .server:
            if let status, status >= 500 || status == 429 || status == 408 { return true }
            return ["RequestTimeout", "SlowDown", "InternalError", "ServiceUnavailable", "BadDigest",
                    "XAmzContentSHA256Mismatch", "RequestTimeTooSkewed"].contains(code ?? "")
        case .malformedResponse, .responseTooLarge, .verificationFailed, .localFile, .invalidRequest, .cancelled: return false
        }
    }

    /// The upload id names no upload (completed, aborted, or never made): AWS says
    /// `NoSuchUpload`, RGW 16 `NoSuchKey`.
    public var isMissingUpload: Bool { kind == .server && status == 404 && (code == "NoSuchUpload" || code == "NoSuchKey") }

    public var description: String {
        var target = "s3://\(bucket)"
        if let key { target += "/\(key)" }
        var text = "S3 \(method) \(target) failed: "
        switch kind {
        case .server: text += "HTTP \(status.map(String.init) ?? "?") \(code ?? "")".trimmingCharacters(in: .whitespaces) + (message.isEmpty ? "" : ": \(message)")
        case .transport: text += "no answer: \(message)"
        case .malformedResponse: text += "unexpected answer: \(message)"
        case .responseTooLarge: text += message
        case .verificationFailed: text += "verification failed: \(message)"
        case .localFile: text += "local file: \(message)"
        case .invalidRequest, .cancelled: text += message
        }
        if let requestID { text += " (request id \(requestID))" }
        return text
    }
}

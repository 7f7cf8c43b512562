import AsyncHTTPClient
public import Foundation
import NIOCore
import NIOHTTP1

/// An S3 client for one bucket of an S3-compatible store (RADOS Gateway, MinIO, AWS), path-style,
/// every request signed with ``SigV4Signer``. The operations are in `S3Client+Objects.swift`,
/// `S3Client+Multipart.swift` and `S3Client+Upload.swift`; this file builds, signs and sends
/// a request and turns a failure into an ``S3Error``.
///
/// Keys given to the client are relative to the location's ``S3Location/keyPrefix``.
/// The transport (an `HTTPClient`, owned and shut down by the caller) is injected, and so are
/// the clock signatures are made at and the sleep between retries: tests need no real time.
public struct S3Client: Sendable {
    /// Every read and wait this client does is bounded by these.
    public struct Limits: Sendable {
        /// Of an error's body, only this much is read (S3's are well under 1 KiB).
        public var maximumErrorBodyBytes = 64 << 10
        /// A listing page or a multipart result larger than this is refused.
        public var maximumXMLBodyBytes = 4 << 20
        /// Keys (or parts, or uploads) asked for per listing page: S3's own maximum.
        public var listPageSize = 1000
        /// ``S3Client/listObjects(prefix:)`` and ``S3Client/listMultipartUploads(prefix:)`` stop with an error past this many.
        public var maximumListedEntries = 100_000
        /// The whole of a request without a large body (listing, HEAD, complete, a small PUT).
        public var requestTimeout: TimeAmount = .seconds(60)
        /// A part upload or a download gets ``requestTimeout`` plus its size at this rate: a
        /// fixed timeout would either cut a large part on a slow link or wait too long on a
        /// small one.
        public var minimumBytesPerSecond: Int64 = 1 << 20

        public init() {}
    }

    public let location: S3Location
    public let signer: SigV4Signer
    public var limits = Limits()
    let transport: any S3Transport
    /// When signatures are made (and presigned URLs start).
    let now: @Sendable () -> Date
    /// The wait between retries.
    let sleep: @Sendable (Duration) async throws -> Void

    public init(location: S3Location, credentials: S3Credentials, transport: any S3Transport,
                now: @escaping @Sendable () -> Date = { Date() },
                sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }) {
        self.location = location
        signer = SigV4Signer(credentials: credentials, region: location.region)
        self.transport = transport
        self.now = now
        self.sleep = sleep
    }

    /// A request as the operations describe it: ``send(_:)`` signs and sends it.
    struct Operation {
        var method: HTTPMethod
        /// The key relative to the location's prefix; nil for a request on the bucket.
        var key: String?
        var query: [(name: String, value: String)] = []
        /// Headers to send and sign (`Content-MD5`, `Range`, `x-amz-meta-*`).
        var headers: [(name: String, value: String)] = []
        var body: Body = .empty
        var timeout: TimeAmount?

        enum Body {
            case empty
            case bytes([UInt8])
            /// A file's byte range with its digests (read once to hash, again as it is sent).
            case file(ReadOnlyFile, Range<Int64>, PartDigest)
        }
    }

    /// The full key in the bucket.
    func objectKey(_ key: String) -> String { location.keyPrefix + key }

    /// `/BUCKET` or `/BUCKET/PREFIX+KEY`, decoded (the signer and the URL encode it once).
    func path(_ key: String?) -> String {
        guard let key else { return "/\(location.bucket)" }
        return "/\(location.bucket)/\(objectKey(key))"
    }

    /// Signs and sends `operation`; returns the response when its status is 2xx (its body not
    /// read yet), otherwise reads a bounded part of the error body and throws it as an ``S3Error``.
    func send(_ operation: Operation) async throws(S3Error) -> HTTPClientResponse {
        let path = path(operation.key)
        var headers = operation.headers
        let payload: SigV4Signer.Payload
        var body: HTTPClientRequest.Body?
        var bodySize: Int64 = 0
        switch operation.body {
        case .empty:
            payload = .body([UInt8]())
        case .bytes(let bytes):
            payload = .body(bytes)
            headers.append(("Content-MD5", PartDigest(of: bytes).md5Base64))
            body = .bytes(bytes)
            bodySize = Int64(bytes.count)
        case .file(let file, let range, let digest):
            payload = .hash(digest.sha256Hex)
            headers.append(("Content-MD5", digest.md5Base64))
            bodySize = range.upperBound - range.lowerBound
            body = .stream(FileRangeChunks(file: file, range: range), length: .known(bodySize))
        }
        let signature = signer.sign(SigV4Signer.Request(method: operation.method.rawValue, host: location.endpoint.hostHeader, path: path,
                                                        query: operation.query, headers: headers, payload: payload), at: now())
        var request = HTTPClientRequest(url: url(path: path, query: operation.query))
        request.method = operation.method
        request.headers.add(name: "Host", value: location.endpoint.hostHeader)
        for (name, value) in headers + signature.headers { request.headers.add(name: name, value: value) }
        request.body = body
        let timeout = operation.timeout ?? limits.requestTimeout + .seconds(bodySize / max(1, limits.minimumBytesPerSecond))

        let response: HTTPClientResponse
        do {
            response = try await transport.execute(request, timeout: timeout)
        } catch {
            throw transportError(error, operation)
        }
        guard (200..<300).contains(response.status.code) else { throw await serverError(response, operation) }
        return response
    }

    /// The URL as sent: the path and query encoded exactly as they were signed.
    func url(path: String, query: [(name: String, value: String)]) -> String {
        var url = location.endpoint.url + SigV4Encoding.path(path)
        if !query.isEmpty { url += "?" + SigV4Signer.canonicalQuery(query) }
        return url
    }

    /// An error for `operation` of `kind`.
    func error(_ kind: S3Error.Kind, _ operation: Operation, message: String, status: Int? = nil, code: String? = nil,
               requestID: String? = nil) -> S3Error {
        S3Error(kind: kind, method: operation.method.rawValue, bucket: location.bucket, key: operation.key.map(objectKey),
                status: status, code: code, message: message, requestID: requestID)
    }

    private func transportError(_ error: any Error, _ operation: Operation) -> S3Error {
        if let error = error as? S3Error { return error }
        if let fileError = error as? S3FileError { return self.error(.localFile, operation, message: fileError.description) }
        if error is CancellationError { return self.error(.cancelled, operation, message: "cancelled") }
        if let client = error as? HTTPClientError, client == .deadlineExceeded || client == .readTimeout || client == .connectTimeout {
            return self.error(.transport, operation, message: "timed out (\(client))")
        }
        return self.error(.transport, operation, message: String(describing: error))
    }

    private func serverError(_ response: HTTPClientResponse, _ operation: Operation) async -> S3Error {
        let status = Int(response.status.code)
        let headerRequestID = response.headers.first(name: "x-amz-request-id")
        var bytes: [UInt8] = []
        // Only the first bytes: an error body larger than that is not S3's, and what was read says enough.
        do {
            for try await chunk in response.body {
                bytes += chunk.readableBytesView.prefix(limits.maximumErrorBodyBytes - bytes.count)
                if bytes.count >= limits.maximumErrorBodyBytes { break }
            }
        } catch {
            // The status alone is the error then.
        }
        // A body that is not S3's XML (a proxy's HTML page, a cut-off read) is not an error of
        // its own: the status and request id below still say what failed.
        if let root = try? S3XML.parse(bytes), let document = S3ErrorDocument(root) {
            return self.error(.server, operation, message: document.message, status: status, code: document.code,
                              requestID: document.requestID ?? headerRequestID)
        }
        let text = String(decoding: bytes.prefix(200), as: UTF8.self)
        return self.error(.server, operation, message: text.isEmpty ? response.status.reasonPhrase : text, status: status,
                          code: Self.code(forStatus: status), requestID: headerRequestID)
    }

    /// The code for an error without a body (every HEAD's): what S3's SDKs call them.
    static func code(forStatus status: Int) -> String? {
        [301: "PermanentRedirect", 400: "BadRequest", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed",
         409: "Conflict", 412: "PreconditionFailed", 416: "InvalidRange", 503: "ServiceUnavailable"][status]
    }

    /// Reads a 2xx response's XML body (bounded) and decodes it with `decode`.
    func decodeXML<T>(_ response: HTTPClientResponse, _ operation: Operation,
                      _ decode: (S3XMLElement) throws(S3ResponseDecoding.DecodingError) -> T) async throws(S3Error) -> T {
        let buffer: ByteBuffer
        do {
            buffer = try await response.body.collect(upTo: limits.maximumXMLBodyBytes)
        } catch is NIOTooManyBytesError {
            throw error(.responseTooLarge, operation, message: "an answer over \(limits.maximumXMLBodyBytes) bytes")
        } catch {
            throw transportError(error, operation)
        }
        let root: S3XMLElement
        do {
            var xmlLimits = S3XML.Limits()
            xmlLimits.maximumBytes = limits.maximumXMLBodyBytes
            root = try S3XML.parse(buffer.readableBytesView, limits: xmlLimits)
        } catch {
            throw self.error(.malformedResponse, operation, message: error.description)
        }
        // CompleteMultipartUpload can fail after its 200 was sent: the error is then the body.
        if let document = S3ErrorDocument(root) {
            throw error(.server, operation, message: document.message, status: Int(response.status.code), code: document.code,
                        requestID: document.requestID ?? response.headers.first(name: "x-amz-request-id"))
        }
        do {
            return try decode(root)
        } catch {
            throw self.error(.malformedResponse, operation, message: error.description)
        }
    }

    /// Reads and drops a 2xx response's body (bounded), so the connection can be reused.
    func drain(_ response: HTTPClientResponse, _ operation: Operation) async throws(S3Error) {
        do {
            _ = try await response.body.collect(upTo: limits.maximumXMLBodyBytes)
        } catch {
            throw transportError(error, operation)
        }
    }
}

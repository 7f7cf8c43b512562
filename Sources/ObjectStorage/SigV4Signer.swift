import Crypto
import Foundation

/// Access keys for an S3-compatible store, read from files by whoever configures the store.
public struct S3Credentials: Sendable, Equatable {
    public var accessKeyID: String
    public var secretAccessKey: String
    /// For temporary credentials (`x-amz-security-token`); nil for long-term keys.
    public var sessionToken: String?

    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
    }
}

/// AWS Signature Version 4 for S3, sans-I/O: given a request's parts and a time, it returns the
/// headers (or query items) that authenticate it. No clock is read and nothing is sent, so every
/// signature can be checked against an independent signer (botocore, `SigV4BotocoreTests`).
///
/// S3's variant: the path is signed encoded once, as sent; the payload hash is the body's
/// SHA-256, `UNSIGNED-PAYLOAD`, or `STREAMING-AWS4-HMAC-SHA256-PAYLOAD` for a body sent in
/// signed chunks (``chunkSignature(previous:chunk:at:)``). References: the S3 API reference,
/// "Authenticating Requests (AWS Signature Version 4)" and its chunked-upload page.
public struct SigV4Signer: Sendable {
    public static let algorithm = "AWS4-HMAC-SHA256"

    /// What the signature says about the body (`x-amz-content-sha256`).
    public enum Payload: Sendable, Equatable {
        /// The SHA-256 of the whole body.
        case hash(String)
        /// The body is not signed (fine over TLS; S3 still checks `Content-MD5` or a checksum if sent).
        case unsigned
        /// The body follows in chunks, each signed with the previous chunk's signature.
        case streaming

        /// The hash of `body`.
        public static func body(_ body: some DataProtocol) -> Payload { .hash(SigV4Encoding.hex(SHA256.hash(data: body))) }

        public var headerValue: String {
            switch self {
            case .hash(let hex): hex
            case .unsigned: "UNSIGNED-PAYLOAD"
            case .streaming: "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
            }
        }
    }

    /// A request to sign. `path` is the decoded path (`/bucket/a key.mp4`); `host` is the
    /// `Host` header as sent (with the port unless it is the scheme's default).
    public struct Request: Sendable {
        public var method: String
        public var host: String
        public var path: String
        public var query: [(name: String, value: String)]
        /// Further headers to sign, as sent.
        public var headers: [(name: String, value: String)]
        public var payload: Payload

        public init(method: String, host: String, path: String, query: [(name: String, value: String)] = [],
                    headers: [(name: String, value: String)] = [], payload: Payload) {
            self.method = method
            self.host = host
            self.path = path
            self.query = query
            self.headers = headers
            self.payload = payload
        }
    }

    /// The result of signing: the headers to add to the request, and the intermediate texts
    /// (for tests and for an error message that must say what was signed).
    public struct Signature: Sendable {
        public var headers: [(name: String, value: String)]
        public var signature: String
        public var canonicalRequest: String
        public var stringToSign: String

        public var authorization: String? { headers.first { $0.name == "Authorization" }?.value }
    }

    /// Headers never signed: they may change hop by hop (botocore's list, so both agree).
    static let unsignedHeaders: Set<String> = [
        "connection", "expect", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
        "transfer-encoding", "upgrade", "user-agent", "x-amzn-trace-id",
    ]

    public let credentials: S3Credentials
    public let region: String
    public let service: String

    public init(credentials: S3Credentials, region: String, service: String = "s3") {
        self.credentials = credentials
        self.region = region
        self.service = service
    }

    /// Signs `request` for the `Authorization` header at `date`.
    public func sign(_ request: Request, at date: Date) -> Signature {
        let stamp = Self.timestamp(date)
        var headers = request.headers
        headers.append(("x-amz-date", stamp))
        headers.append(("x-amz-content-sha256", request.payload.headerValue))
        if let token = credentials.sessionToken { headers.append(("x-amz-security-token", token)) }
        let (canonicalHeaders, signedHeaders) = Self.canonicalHeaders(host: request.host, headers)
        let canonical = [request.method.uppercased(), SigV4Encoding.path(request.path), Self.canonicalQuery(request.query),
                         canonicalHeaders, signedHeaders, request.payload.headerValue].joined(separator: "\n")
        let toSign = stringToSign(canonical, stamp: stamp)
        let signature = sign(toSign, day: String(stamp.prefix(8)))
        let authorization = "\(Self.algorithm) Credential=\(credentials.accessKeyID)/\(scope(day: String(stamp.prefix(8)))), "
            + "SignedHeaders=\(signedHeaders), Signature=\(signature)"
        var added: [(name: String, value: String)] = [("Authorization", authorization), ("x-amz-date", stamp),
                                                      ("x-amz-content-sha256", request.payload.headerValue)]
        if let token = credentials.sessionToken { added.append(("x-amz-security-token", token)) }
        return Signature(headers: added, signature: signature, canonicalRequest: canonical, stringToSign: toSign)
    }

    /// The query items of a presigned URL for `request` (its own query included), valid for
    /// `expires` seconds from `date` (1 s … 7 days). The body is not signed.
    public func presignedQuery(_ request: Request, at date: Date, expires: Int) -> [(name: String, value: String)] {
        let stamp = Self.timestamp(date)
        let day = String(stamp.prefix(8))
        let (canonicalHeaders, signedHeaders) = Self.canonicalHeaders(host: request.host, request.headers)
        var query = request.query
        query.append(("X-Amz-Algorithm", Self.algorithm))
        query.append(("X-Amz-Credential", "\(credentials.accessKeyID)/\(scope(day: day))"))
        query.append(("X-Amz-Date", stamp))
        query.append(("X-Amz-Expires", String(min(max(expires, 1), 604_800))))
        query.append(("X-Amz-SignedHeaders", signedHeaders))
        if let token = credentials.sessionToken { query.append(("X-Amz-Security-Token", token)) }
        let canonical = [request.method.uppercased(), SigV4Encoding.path(request.path), Self.canonicalQuery(query),
                         canonicalHeaders, signedHeaders, Payload.unsigned.headerValue].joined(separator: "\n")
        query.append(("X-Amz-Signature", sign(stringToSign(canonical, stamp: stamp), day: day)))
        return query
    }

    /// The signature of one chunk of a streaming body: `previous` is the request's signature for
    /// the first chunk, then each chunk's; the body ends with an empty chunk, signed too.
    public func chunkSignature(previous: String, chunk: some DataProtocol, at date: Date) -> String {
        let stamp = Self.timestamp(date)
        let day = String(stamp.prefix(8))
        let toSign = ["AWS4-HMAC-SHA256-PAYLOAD", stamp, scope(day: day), previous,
                      SigV4Encoding.hex(SHA256.hash(data: [UInt8]())), SigV4Encoding.hex(SHA256.hash(data: chunk))].joined(separator: "\n")
        return sign(toSign, day: day)
    }

    /// One chunk as it goes on the wire: `hex(size);chunk-signature=SIG\r\n` + data + `\r\n`.
    public static func chunkFrame(_ chunk: [UInt8], signature: String) -> [UInt8] {
        Array("\(String(chunk.count, radix: 16));chunk-signature=\(signature)\r\n".utf8) + chunk + Array("\r\n".utf8)
    }

    // MARK: Parts

    func scope(day: String) -> String { "\(day)/\(region)/\(service)/aws4_request" }

    private func stringToSign(_ canonicalRequest: String, stamp: String) -> String {
        [Self.algorithm, stamp, scope(day: String(stamp.prefix(8))), SigV4Encoding.hex(SHA256.hash(data: Array(canonicalRequest.utf8)))]
            .joined(separator: "\n")
    }

    private func sign(_ text: String, day: String) -> String {
        func hmac(_ key: SymmetricKey, _ text: String) -> SymmetricKey {
            SymmetricKey(data: HMAC<SHA256>.authenticationCode(for: Array(text.utf8), using: key))
        }
        var key = SymmetricKey(data: Array("AWS4\(credentials.secretAccessKey)".utf8))
        for part in [day, region, service, "aws4_request"] { key = hmac(key, part) }
        return SigV4Encoding.hex(HMAC<SHA256>.authenticationCode(for: Array(text.utf8), using: key))
    }

    /// `name:value\n` lines, names lower-cased and sorted, values trimmed with inner runs of
    /// white space collapsed, repeated names joined with commas; and the `;`-joined names.
    static func canonicalHeaders(host: String, _ headers: [(name: String, value: String)]) -> (String, String) {
        var values: [String: [String]] = ["host": [host]]
        for (name, value) in headers {
            let key = name.lowercased().trimmingCharacters(in: .whitespaces)
            guard !unsignedHeaders.contains(key) else { continue }
            values[key, default: []].append(value.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }).joined(separator: " "))
        }
        let names = values.keys.sorted()
        let lines = names.map { "\($0):\(values[$0]!.joined(separator: ","))\n" }.joined()
        return (lines, names.joined(separator: ";"))
    }

    /// Items encoded, then sorted by name and value; `name=` for an empty value.
    static func canonicalQuery(_ items: [(name: String, value: String)]) -> String {
        let encoded: [(name: String, value: String)] = items.map { (SigV4Encoding.queryComponent($0.name), SigV4Encoding.queryComponent($0.value)) }
        let sorted = encoded.sorted { a, b in a.name == b.name ? a.value < b.value : a.name < b.name }
        return sorted.map { "\($0.name)=\($0.value)" }.joined(separator: "&")
    }

    /// `YYYYMMDDTHHMMSSZ` in UTC.
    static func timestamp(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        return String(format: "%04d%02d%02dT%02d%02d%02dZ", c.year!, c.month!, c.day!, c.hour!, c.minute!, c.second!)
    }
}

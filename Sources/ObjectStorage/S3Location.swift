import Foundation

/// Where recordings go in an S3-compatible store, as an operator writes it:
/// `s3://BUCKET[/PREFIX]?endpoint=http://127.0.0.1:7480&region=us-east-1`.
///
/// Addressing is path-style (`http://HOST:PORT/BUCKET/KEY`): it works with every S3-compatible
/// server (RADOS Gateway, MinIO) without wildcard DNS, and with bucket names that contain dots
/// over TLS. `region` defaults to `us-east-1`, which is what RGW and MinIO accept unless told
/// otherwise; it is part of every signature, so it must match the server's.
public struct S3Location: Sendable, Equatable {
    public var bucket: String
    /// Prepended to every key given to ``S3Client`` ("" or ending in `/`).
    public var keyPrefix: String
    public var endpoint: Endpoint
    public var region: String

    public struct Endpoint: Sendable, Equatable {
        public var scheme: String
        public var host: String
        public var port: Int

        /// The `Host` header as sent and signed: the port only when it is not the scheme's default.
        public var hostHeader: String {
            let name = host.contains(":") ? "[\(host)]" : host
            let isDefault = (scheme == "http" && port == 80) || (scheme == "https" && port == 443)
            return isDefault ? name : "\(name):\(port)"
        }

        public var url: String { "\(scheme)://\(hostHeader)" }
    }

    public init(bucket: String, keyPrefix: String = "", endpoint: Endpoint, region: String = "us-east-1") {
        self.bucket = bucket
        self.keyPrefix = keyPrefix
        self.endpoint = endpoint
        self.region = region
    }

    /// Parses `s3://BUCKET[/PREFIX]?endpoint=URL[&region=REGION]`.
    public init(parsing text: String) throws(S3ConfigurationError) {
        guard let url = URLComponents(string: text), url.scheme?.lowercased() == "s3" else { throw .notAnS3URL(text) }
        guard let bucket = url.host, !bucket.isEmpty else { throw .missingBucket(text) }
        guard Self.isValidBucketName(bucket) else { throw .invalidBucketName(bucket) }
        var endpointText: String?
        var region = "us-east-1"
        for item in url.queryItems ?? [] {
            switch item.name {
            case "endpoint": endpointText = item.value
            case "region":
                guard let value = item.value, !value.isEmpty else { throw .invalidRegion(item.value ?? "") }
                region = value
            default: throw .unknownParameter(item.name)
            }
        }
        guard let endpointText, !endpointText.isEmpty else { throw .missingEndpoint(text) }
        var prefix = url.path.hasPrefix("/") ? String(url.path.dropFirst()) : url.path
        if !prefix.isEmpty && !prefix.hasSuffix("/") { prefix += "/" }
        self.init(bucket: bucket, keyPrefix: prefix, endpoint: try Self.endpoint(endpointText), region: region)
    }

    static func endpoint(_ text: String) throws(S3ConfigurationError) -> Endpoint {
        guard let url = URLComponents(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw .invalidEndpoint(text, "it must start with http:// or https://")
        }
        guard let host = url.host, !host.isEmpty else { throw .invalidEndpoint(text, "it names no host") }
        guard url.path.isEmpty || url.path == "/", url.query == nil, url.fragment == nil, url.user == nil else {
            throw .invalidEndpoint(text, "it must be only scheme://host[:port] (the bucket goes after s3://)")
        }
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        guard (1...65535).contains(port) else { throw .invalidEndpoint(text, "port \(port) is out of range") }
        // URLComponents keeps the brackets of an IPv6 literal.
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        return Endpoint(scheme: scheme, host: bare, port: port)
    }

    /// S3's rules for new buckets: 3–63 characters of lower-case letters, digits, `.` and `-`,
    /// beginning and ending with a letter or digit.
    public static func isValidBucketName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (3...63).contains(bytes.count) else { return false }
        func isAlphanumeric(_ b: UInt8) -> Bool { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(b) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b) }
        guard isAlphanumeric(bytes.first!), isAlphanumeric(bytes.last!) else { return false }
        return bytes.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") }
    }
}

extension S3Credentials {
    /// Reads the access key ID and the secret key from two files (as an operator keeps them:
    /// mode 0600, one line each); white space and line ends around each are dropped.
    public static func load(accessKeyFile: String, secretKeyFile: String) throws(S3ConfigurationError) -> S3Credentials {
        S3Credentials(accessKeyID: try readKey(accessKeyFile, what: "access key ID"), secretAccessKey: try readKey(secretKeyFile, what: "secret key"))
    }

    /// Keys are short; anything longer is the wrong file.
    static let maximumKeyFileBytes = 4096

    private static func readKey(_ path: String, what: String) throws(S3ConfigurationError) -> String {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            let reason = FileManager.default.fileExists(atPath: path) ? "it cannot be read (check its owner and mode)" : "it does not exist"
            throw .credentialsFile(path, what: what, problem: reason)
        }
        guard data.count <= maximumKeyFileBytes else {
            throw .credentialsFile(path, what: what, problem: "it holds \(data.count) bytes, more than a key (\(maximumKeyFileBytes) at most); is it the right file?")
        }
        guard let text = String(data: data, encoding: .utf8) else { throw .credentialsFile(path, what: what, problem: "it is not UTF-8 text") }
        let key = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !key.isEmpty else { throw .credentialsFile(path, what: what, problem: "it is empty; write the \(what) into it") }
        guard !key.contains(where: { $0.isWhitespace || $0.isNewline }) else {
            throw .credentialsFile(path, what: what, problem: "it holds more than one word; it must hold the \(what) alone")
        }
        return key
    }
}

/// A mistake in the store's configuration: each says what is wrong and how to fix it.
public enum S3ConfigurationError: Error, Equatable, CustomStringConvertible {
    case notAnS3URL(String)
    case missingBucket(String)
    case invalidBucketName(String)
    case missingEndpoint(String)
    case invalidEndpoint(String, String)
    case invalidRegion(String)
    case unknownParameter(String)
    case credentialsFile(String, what: String, problem: String)

    public var description: String {
        let form = "s3://BUCKET?endpoint=http://HOST:PORT&region=REGION"
        switch self {
        case .notAnS3URL(let text): return "'\(text)' is not an S3 location; write it as \(form)"
        case .missingBucket(let text): return "'\(text)' names no bucket; write it as \(form)"
        case .invalidBucketName(let name):
            return "bucket name '\(name)' is not valid: use 3-63 lower-case letters, digits, '.' or '-', beginning and ending with a letter or digit"
        case .missingEndpoint(let text): return "'\(text)' has no endpoint; add ?endpoint=http://HOST:PORT (the S3 server's URL)"
        case .invalidEndpoint(let text, let reason): return "endpoint '\(text)' is not valid: \(reason)"
        case .invalidRegion(let text): return "region '\(text)' is not valid; leave it out for us-east-1 or give the server's region"
        case .unknownParameter(let name): return "unknown parameter '\(name)' in the S3 location; only endpoint and region are known"
        case .credentialsFile(let path, let what, let problem): return "S3 \(what) file \(path): \(problem)"
        }
    }
}

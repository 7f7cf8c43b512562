import Foundation
import Shared
public import Logging

/// Everything an operator can set for `record-server`. Every field has a default, so a
/// configuration file lists only what differs; `deploy/record-server.example.json` shows all
/// of them and `docs/configuration.md` explains each.
///
/// Typical use:
/// ```
/// var config = try ServerConfiguration.load(path: file)       // or ServerConfiguration()
/// config = try config.merging(overrides: commandLineValues)   // command line wins
/// try config.validate()                                       // names the field and the fix
/// for warning in config.warnings { logger.warning("\(warning)") }
/// ```
///
/// Decoding is strict: unknown keys are errors (a misspelt key would otherwise be silently
/// ignored and its default used), and enumerated values must be spelt exactly.
public struct ServerConfiguration: Codable, Sendable, Equatable {
    /// A TCP listening address.
    public struct Listener: Codable, Sendable, Equatable {
        /// An IP address or host name to bind (IPv6 without brackets here).
        var host: String
        var port: Int

        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }
    }

    /// The admin HTTP API (recordctl talks to it).
    public struct Admin: Codable, Sendable, Equatable {
        /// Whether the admin API listens at all.
        public var enabled = true
        /// Loopback by default: the admin API is for the operator on this host or a tunnel.
        public var host = "127.0.0.1"
        public var port = 7444
        /// The bearer token clients must present. Prefer `tokenFile`, which keeps the secret
        /// out of a file that is often world-readable and copied around.
        public var token: String?
        /// A file whose content (surrounding whitespace trimmed) is the token.
        public var tokenFile: String?
        /// Serve the API and the web console over HTTPS, with the server's own certificate and
        /// key (`tls.certificate`, `tls.privateKey`); the console's cookie is then `Secure`.
        public var tls = false

        public init(enabled: Bool = true, host: String = "127.0.0.1", port: Int = 7444, token: String? = nil, tokenFile: String? = nil,
                    tls: Bool = false) {
            self.enabled = enabled
            self.host = host
            self.port = port
            self.token = token
            self.tokenFile = tokenFile
            self.tls = tls
        }
    }

    /// TLS for agent connections (PEM files).
    public struct TLS: Codable, Sendable, Equatable {
        /// The CA that issued the agents' client certificates.
        public var caCertificate = "/etc/record-server/tls/ca.pem"
        /// The server's certificate chain.
        public var certificate = "/etc/record-server/tls/server.pem"
        /// The server's private key.
        public var privateKey = "/etc/record-server/tls/server-key.pem"
        /// `revoked.json` (from `recordctl ca revoke`) listing revoked agent certificate serials.
        public var revocationList: String?
        /// Agents must present a certificate signed by `caCertificate`; its common name is the
        /// agent id. When false, agents authenticate with bearer tokens instead.
        public var requireClientCertificate = true

        public init(caCertificate: String = "/etc/record-server/tls/ca.pem", certificate: String = "/etc/record-server/tls/server.pem",
                    privateKey: String = "/etc/record-server/tls/server-key.pem", revocationList: String? = nil,
                    requireClientCertificate: Bool = true) {
            self.caCertificate = caCertificate
            self.certificate = certificate
            self.privateKey = privateKey
            self.revocationList = revocationList
            self.requireClientCertificate = requireClientCertificate
        }
    }

    /// When recordings are flushed to the disk.
    public enum FsyncMode: String, Codable, Sendable, Equatable, CaseIterable {
        /// fsync after every fragment, before the agent is told the samples are safe.
        case fragment
        /// Leave flushing to the OS (tmpfs, benchmarks): a power cut can lose acknowledged data.
        case none
    }

    /// Splitting a session into several files.
    public struct Segment: Codable, Sendable, Equatable {
        /// Start a new file after this much media time.
        public var maxSeconds: Double?
        /// Start a new file once the current one reaches this size.
        var maxBytes: Int?

        init(maxSeconds: Double? = nil, maxBytes: Int? = nil) {
            self.maxSeconds = maxSeconds
            self.maxBytes = maxBytes
        }
    }

    /// Automatic deletion of finished recordings; off unless a limit is set.
    struct Retention: Codable, Sendable, Equatable {
        var maxAgeDays: Double?
        var maxTotalBytes: Int64?

        init(maxAgeDays: Double? = nil, maxTotalBytes: Int64? = nil) {
            self.maxAgeDays = maxAgeDays
            self.maxTotalBytes = maxTotalBytes
        }
    }

    /// Recordings copied to an S3-compatible object store once finished (issue 18).
    public struct ObjectStore: Codable, Sendable, Equatable {
        /// `s3://BUCKET[/PREFIX]?endpoint=http://HOST:PORT&region=REGION`.
        public var url: String
        /// Files whose first line is the access key id and the secret access key.
        public var accessKeyFile: String
        public var secretKeyFile: String
        /// Keep the local file once its object is uploaded and verified (the default); false
        /// removes it then, and the admin API serves the recording from the store.
        public var keepLocalCopy = true

        public init(url: String, accessKeyFile: String, secretKeyFile: String, keepLocalCopy: Bool = true) {
            self.url = url
            self.accessKeyFile = accessKeyFile
            self.secretKeyFile = secretKeyFile
            self.keepLocalCopy = keepLocalCopy
        }
    }

    /// Where the configuration file is looked for when none is named.
    static let defaultPath = "/etc/record-server/record-server.json"

    /// Where agents connect.
    public var ingest = Listener(host: "0.0.0.0", port: 7443)
    public var admin = Admin()
    /// Recordings live here, and the catalog unless `catalog` names a PostgreSQL database.
    public var dataDirectory = "/var/lib/record-server"
    /// `sqlite` (the default: `catalog.sqlite` in the data directory) or a PostgreSQL URL,
    /// `postgresql://USER@HOST:PORT/DATABASE?password_file=PATH` (``CatalogLocation``).
    public var catalog = "sqlite"
    /// Where finished recordings are uploaded; nil (the default) keeps them on this host only.
    public var objectStore: ObjectStore?
    public var tls = TLS()
    /// A JSON file mapping bearer token → agent id; used only when
    /// `tls.requireClientCertificate` is false.
    var bearerTokens: String?
    /// Development only: agents connect over plain TCP, no TLS at all.
    public var insecurePlaintext = false
    /// How long a session whose agent disconnected waits for it to resume.
    public var resumeWindowSeconds = 60
    public var fsync = FsyncMode.fragment
    /// Longest fragment; at most this much media is lost in a crash.
    var fragmentSeconds: Double = 1
    public var segment = Segment()
    /// Concurrent recording sessions accepted.
    public var maxSessions = 64
    /// Concurrent sessions (live or waiting for a resume) one agent id may hold.
    var maxSessionsPerAgent = 4
    /// Bytes of partly received frames the server holds over all agent connections; a
    /// connection whose next bytes do not fit is closed with `budgetExhausted` (protocol.md §9).
    var partialFrameBudgetBytes = 256 << 20
    /// The slowest a frame may arrive once begun: it must complete within 10 s + its length
    /// at this rate, or the connection is closed with `frameTooSlow` (protocol.md §9).
    var minFrameBytesPerSecond = 16_384
    /// Bytes one session may have queued before ingest stops reading its connection
    /// (backpressure to the agent instead of unbounded memory).
    var sessionQueueBytes = 64 << 20
    /// How long a live (trickling) agent connection lets its bytes collect in the kernel
    /// before they are read: one wake-up per interval instead of one per sample. Adds at
    /// most this much to acknowledgement latency; a busy connection is read at once. 0 turns
    /// it off.
    var readCoalescingMillis = 200
    /// A failing track (bad samples) fails its whole session instead of only itself.
    public var failSessionOnTrackError = false
    var retention = Retention()
    /// How long a shutdown waits for sessions to finish their files.
    public var shutdownGraceSeconds: Double = 10
    public var logLevel = Logger.Level.info
    /// Receivers of signed event posts (docs/admin-api.md, "Webhooks"); none by default.
    public var webhooks: [Webhook] = []

    /// The defaults.
    public init() {}

    // MARK: Codable

    enum CodingKeys: String, CodingKey, CaseIterable {
        case ingest, admin, dataDirectory, catalog, objectStore, tls, bearerTokens, insecurePlaintext, resumeWindowSeconds, fsync, fragmentSeconds,
             segment, maxSessions, maxSessionsPerAgent, partialFrameBudgetBytes, minFrameBytesPerSecond, sessionQueueBytes, readCoalescingMillis, failSessionOnTrackError, retention, shutdownGraceSeconds, logLevel,
             webhooks
    }

    public init(from decoder: any Decoder) throws {
        try StrictDecoding.rejectUnknownKeys(decoder, known: CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = ServerConfiguration()
        ingest = try c.decodeIfPresent(Listener.self, forKey: .ingest) ?? d.ingest
        admin = try c.decodeIfPresent(Admin.self, forKey: .admin) ?? d.admin
        dataDirectory = try c.decodeIfPresent(String.self, forKey: .dataDirectory) ?? d.dataDirectory
        catalog = try c.decodeIfPresent(String.self, forKey: .catalog) ?? d.catalog
        objectStore = try c.decodeIfPresent(ObjectStore.self, forKey: .objectStore)
        tls = try c.decodeIfPresent(TLS.self, forKey: .tls) ?? d.tls
        bearerTokens = try c.decodeIfPresent(String.self, forKey: .bearerTokens)
        insecurePlaintext = try c.decodeIfPresent(Bool.self, forKey: .insecurePlaintext) ?? d.insecurePlaintext
        resumeWindowSeconds = try c.decodeIfPresent(Int.self, forKey: .resumeWindowSeconds) ?? d.resumeWindowSeconds
        if let raw = try c.decodeIfPresent(String.self, forKey: .fsync) {
            guard let mode = FsyncMode(rawValue: raw) else {
                throw ConfigurationError(.invalidValue, field: StrictDecoding.path(decoder.codingPath, CodingKeys.fsync),
                                         "\"\(raw)\" is not a fsync mode; use \"fragment\" (safe, the default) or \"none\" (tmpfs, benchmarks)")
            }
            fsync = mode
        }
        fragmentSeconds = try c.decodeIfPresent(Double.self, forKey: .fragmentSeconds) ?? d.fragmentSeconds
        segment = try c.decodeIfPresent(Segment.self, forKey: .segment) ?? d.segment
        maxSessions = try c.decodeIfPresent(Int.self, forKey: .maxSessions) ?? d.maxSessions
        maxSessionsPerAgent = try c.decodeIfPresent(Int.self, forKey: .maxSessionsPerAgent) ?? d.maxSessionsPerAgent
        partialFrameBudgetBytes = try c.decodeIfPresent(Int.self, forKey: .partialFrameBudgetBytes) ?? d.partialFrameBudgetBytes
        minFrameBytesPerSecond = try c.decodeIfPresent(Int.self, forKey: .minFrameBytesPerSecond) ?? d.minFrameBytesPerSecond
        sessionQueueBytes = try c.decodeIfPresent(Int.self, forKey: .sessionQueueBytes) ?? d.sessionQueueBytes
        readCoalescingMillis = try c.decodeIfPresent(Int.self, forKey: .readCoalescingMillis) ?? d.readCoalescingMillis
        failSessionOnTrackError = try c.decodeIfPresent(Bool.self, forKey: .failSessionOnTrackError) ?? d.failSessionOnTrackError
        retention = try c.decodeIfPresent(Retention.self, forKey: .retention) ?? d.retention
        shutdownGraceSeconds = try c.decodeIfPresent(Double.self, forKey: .shutdownGraceSeconds) ?? d.shutdownGraceSeconds
        if let raw = try c.decodeIfPresent(String.self, forKey: .logLevel) {
            logLevel = try Self.parseLogLevel(raw, field: StrictDecoding.path(decoder.codingPath, CodingKeys.logLevel))
        }
        webhooks = try c.decodeIfPresent([Webhook].self, forKey: .webhooks) ?? d.webhooks
    }

    /// Encodes every field, absent optionals as `null`, so the output documents all options.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(ingest, forKey: .ingest)
        try c.encode(admin, forKey: .admin)
        try c.encode(dataDirectory, forKey: .dataDirectory)
        try c.encode(catalog, forKey: .catalog)
        try c.encode(objectStore, forKey: .objectStore)
        try c.encode(tls, forKey: .tls)
        try c.encode(bearerTokens, forKey: .bearerTokens)
        try c.encode(insecurePlaintext, forKey: .insecurePlaintext)
        try c.encode(resumeWindowSeconds, forKey: .resumeWindowSeconds)
        try c.encode(fsync.rawValue, forKey: .fsync)
        try c.encode(fragmentSeconds, forKey: .fragmentSeconds)
        try c.encode(segment, forKey: .segment)
        try c.encode(maxSessions, forKey: .maxSessions)
        try c.encode(maxSessionsPerAgent, forKey: .maxSessionsPerAgent)
        try c.encode(partialFrameBudgetBytes, forKey: .partialFrameBudgetBytes)
        try c.encode(minFrameBytesPerSecond, forKey: .minFrameBytesPerSecond)
        try c.encode(sessionQueueBytes, forKey: .sessionQueueBytes)
        try c.encode(readCoalescingMillis, forKey: .readCoalescingMillis)
        try c.encode(failSessionOnTrackError, forKey: .failSessionOnTrackError)
        try c.encode(retention, forKey: .retention)
        try c.encode(shutdownGraceSeconds, forKey: .shutdownGraceSeconds)
        try c.encode(logLevel.rawValue, forKey: .logLevel)
        try c.encode(webhooks, forKey: .webhooks)
    }

    static func parseLogLevel(_ raw: String, field: String) throws(ConfigurationError) -> Logger.Level {
        guard let level = Logger.Level(rawValue: raw) else {
            throw ConfigurationError(.invalidValue, field: field, "\"\(raw)\" is not a log level; use one of " +
                                     Logger.Level.allCases.map(\.rawValue).joined(separator: ", "))
        }
        return level
    }
}

extension ServerConfiguration.Listener {
    enum CodingKeys: String, CodingKey, CaseIterable { case host, port }

    public init(from decoder: any Decoder) throws {
        try StrictDecoding.rejectUnknownKeys(decoder, known: CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        // A listener given only a host or a port keeps the default of the other.
        let d = ServerConfiguration().ingest
        host = try c.decodeIfPresent(String.self, forKey: .host) ?? d.host
        port = try c.decodeIfPresent(Int.self, forKey: .port) ?? d.port
    }
}

extension ServerConfiguration.Admin {
    enum CodingKeys: String, CodingKey, CaseIterable { case enabled, host, port, token, tokenFile, tls }

    public init(from decoder: any Decoder) throws {
        try StrictDecoding.rejectUnknownKeys(decoder, known: CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = Self()
        enabled = try c.decodeIfPresent(Bool.self, forKey: .enabled) ?? d.enabled
        host = try c.decodeIfPresent(String.self, forKey: .host) ?? d.host
        port = try c.decodeIfPresent(Int.self, forKey: .port) ?? d.port
        token = try c.decodeIfPresent(String.self, forKey: .token)
        tokenFile = try c.decodeIfPresent(String.self, forKey: .tokenFile)
        tls = try c.decodeIfPresent(Bool.self, forKey: .tls) ?? d.tls
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(enabled, forKey: .enabled)
        try c.encode(host, forKey: .host)
        try c.encode(port, forKey: .port)
        try c.encode(token, forKey: .token)
        try c.encode(tokenFile, forKey: .tokenFile)
        try c.encode(tls, forKey: .tls)
    }
}

extension ServerConfiguration.ObjectStore {
    enum CodingKeys: String, CodingKey, CaseIterable { case url, accessKeyFile, secretKeyFile, keepLocalCopy }

    public init(from decoder: any Decoder) throws {
        try StrictDecoding.rejectUnknownKeys(decoder, known: CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        url = try c.decode(String.self, forKey: .url)
        accessKeyFile = try c.decode(String.self, forKey: .accessKeyFile)
        secretKeyFile = try c.decode(String.self, forKey: .secretKeyFile)
        keepLocalCopy = try c.decodeIfPresent(Bool.self, forKey: .keepLocalCopy) ?? true
    }
}

extension ServerConfiguration.TLS {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case caCertificate, certificate, privateKey, revocationList, requireClientCertificate
    }

    public init(from decoder: any Decoder) throws {
        try StrictDecoding.rejectUnknownKeys(decoder, known: CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = Self()
        caCertificate = try c.decodeIfPresent(String.self, forKey: .caCertificate) ?? d.caCertificate
        certificate = try c.decodeIfPresent(String.self, forKey: .certificate) ?? d.certificate
        privateKey = try c.decodeIfPresent(String.self, forKey: .privateKey) ?? d.privateKey
        revocationList = try c.decodeIfPresent(String.self, forKey: .revocationList)
        requireClientCertificate = try c.decodeIfPresent(Bool.self, forKey: .requireClientCertificate) ?? d.requireClientCertificate
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(caCertificate, forKey: .caCertificate)
        try c.encode(certificate, forKey: .certificate)
        try c.encode(privateKey, forKey: .privateKey)
        try c.encode(revocationList, forKey: .revocationList)
        try c.encode(requireClientCertificate, forKey: .requireClientCertificate)
    }
}

extension ServerConfiguration.Segment {
    enum CodingKeys: String, CodingKey, CaseIterable { case maxSeconds, maxBytes }

    public init(from decoder: any Decoder) throws {
        try StrictDecoding.rejectUnknownKeys(decoder, known: CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        maxSeconds = try c.decodeIfPresent(Double.self, forKey: .maxSeconds)
        maxBytes = try c.decodeIfPresent(Int.self, forKey: .maxBytes)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(maxSeconds, forKey: .maxSeconds)
        try c.encode(maxBytes, forKey: .maxBytes)
    }
}

extension ServerConfiguration.Retention {
    enum CodingKeys: String, CodingKey, CaseIterable { case maxAgeDays, maxTotalBytes }

    init(from decoder: any Decoder) throws {
        try StrictDecoding.rejectUnknownKeys(decoder, known: CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        maxAgeDays = try c.decodeIfPresent(Double.self, forKey: .maxAgeDays)
        maxTotalBytes = try c.decodeIfPresent(Int64.self, forKey: .maxTotalBytes)
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(maxAgeDays, forKey: .maxAgeDays)
        try c.encode(maxTotalBytes, forKey: .maxTotalBytes)
    }
}

extension StrictDecoding {
    /// The server's form: unknown keys are a `ConfigurationError(.unknownKey)`.
    static func rejectUnknownKeys<Key: CodingKey & CaseIterable>(_ decoder: any Decoder, known: Key.Type) throws {
        guard let unknown = try unknownKeys(in: decoder, known: known) else { return }
        throw ConfigurationError(.unknownKey, field: unknown.fields.joined(separator: ", "), unknown.message)
    }
}

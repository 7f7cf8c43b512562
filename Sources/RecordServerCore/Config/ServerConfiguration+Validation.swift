import Foundation
import ObjectStorage
import RecordingTLS
import Shared

extension ServerConfiguration {
    /// Throws the first problem `problems()` finds.
    public func validate() throws(ConfigurationError) {
        if let first = problems().first { throw first }
    }

    /// Every problem with this configuration, in file order, each naming the field and the fix.
    /// Checks that referenced files (TLS material unless `insecurePlaintext`, token files)
    /// exist and are readable now, so a mistake shows at startup rather than at the first
    /// connection.
    public func problems() -> [ConfigurationError] {
        var found: [ConfigurationError] = []
        func fail(_ field: String, _ message: String) { found.append(ConfigurationError(.invalidValue, field: field, message)) }

        // Addresses.
        checkHost(ingest.host, field: "ingest.host", fail)
        checkPort(ingest.port, field: "ingest.port", fail)
        if admin.enabled {
            checkHost(admin.host, field: "admin.host", fail)
            checkPort(admin.port, field: "admin.port", fail)
            let overlapping = admin.host == ingest.host || Self.isWildcard(admin.host) || Self.isWildcard(ingest.host)
            if admin.port == ingest.port && admin.port != 0 && overlapping {
                fail("admin.port", "is the same as ingest.port (\(ingest.port)) on an overlapping address; choose another port")
            }
            switch (admin.token, admin.tokenFile) {
            case (nil, nil):
                fail("admin.token", "the admin API needs a bearer token: set admin.token or admin.tokenFile " +
                     "(a file holding the token), or set admin.enabled to false")
            case (.some, .some):
                fail("admin.token", "admin.token and admin.tokenFile are both set; keep only one (admin.tokenFile is preferred)")
            case (let token?, nil):
                if let problem = Self.tokenProblem(token) { fail("admin.token", problem) }
            case (nil, let file?):
                do {
                    let token = try Self.readSecret(file, field: "admin.tokenFile")
                    if let problem = Self.tokenProblem(token) { fail("admin.tokenFile", "the token in \(file) \(problem)") }
                } catch { found.append(error) }
            }
        }

        // Storage.
        if dataDirectory.isEmpty || !dataDirectory.hasPrefix("/") {
            fail("dataDirectory", "must be an absolute path (got \"\(dataDirectory)\"), e.g. /var/lib/record-server")
        }
        do { _ = try CatalogLocation(parsing: catalog) } catch { fail("catalog", error.description) }
        if let store = objectStore {
            do { _ = try S3Location(parsing: store.url) } catch { fail("objectStore.url", error.description) }
            if store.accessKeyFile.isEmpty || store.secretKeyFile.isEmpty {
                fail("objectStore", "needs accessKeyFile and secretKeyFile (files holding the access key id and the secret key)")
            } else {
                do { _ = try S3Credentials.load(accessKeyFile: store.accessKeyFile, secretKeyFile: store.secretKeyFile) } catch {
                    fail("objectStore.accessKeyFile", error.description)
                }
            }
        }

        // Transport security.
        if !insecurePlaintext {
            checkReadableFile(tls.certificate, field: "tls.certificate", what: "the server's PEM certificate chain", fail)
            if let validity = CertificateValidity.read(pemFile: tls.certificate),
               let problem = validity.problem(at: Date(), file: tls.certificate, renew: Self.renewServerCertificate) {
                fail("tls.certificate", problem)
            }
            checkReadableFile(tls.privateKey, field: "tls.privateKey", what: "the server's PEM private key", fail)
            if tls.requireClientCertificate {
                checkReadableFile(tls.caCertificate, field: "tls.caCertificate", what: "the PEM certificate of the CA that issues agent certificates", fail)
                if let crl = tls.revocationList {
                    checkReadableFile(crl, field: "tls.revocationList", what: "the revoked.json written by `recordctl ca revoke`, or remove the key", fail)
                }
            } else if bearerTokens == nil {
                fail("bearerTokens", "tls.requireClientCertificate is false, so agents must authenticate with bearer tokens: " +
                     "set bearerTokens to a JSON file mapping token to agent id, or set tls.requireClientCertificate to true")
            }
        }
        if bearerTokens != nil, !tls.requireClientCertificate || insecurePlaintext {
            do { _ = try loadBearerTokens() } catch { found.append(error) }
        }

        // Sessions and files.
        if !(1 ... 3600).contains(resumeWindowSeconds) {
            fail("resumeWindowSeconds", "must be from 1 to 3600 seconds (got \(resumeWindowSeconds))")
        }
        if !(fragmentSeconds.isFinite && fragmentSeconds >= 0.1 && fragmentSeconds <= 10) {
            fail("fragmentSeconds", "must be from 0.1 to 10 seconds (got \(fragmentSeconds)); 1 is a good balance of loss on crash and overhead")
        }
        if let seconds = segment.maxSeconds, !(seconds.isFinite && seconds >= fragmentSeconds) {
            fail("segment.maxSeconds", "must be at least fragmentSeconds (\(fragmentSeconds)) (got \(seconds)), or null for one file per session")
        }
        if let bytes = segment.maxBytes, bytes < 1 << 20 {
            fail("segment.maxBytes", "must be at least 1048576 (1 MiB) (got \(bytes)), or null for one file per session")
        }
        if !(1 ... 10_000).contains(maxSessions) {
            fail("maxSessions", "must be from 1 to 10000 (got \(maxSessions))")
        }
        if !(1 ... 10_000).contains(maxSessionsPerAgent) {
            fail("maxSessionsPerAgent", "must be from 1 to 10000 (got \(maxSessionsPerAgent))")
        }
        let largestFrame = ProtocolLimits.ceilingFramePayload + ProtocolLimits.frameHeaderSize
        if !(largestFrame ... (16 << 30)).contains(partialFrameBudgetBytes) {
            fail("partialFrameBudgetBytes", "must be from \(largestFrame) (one largest frame with its header) to 17179869184 (16 GiB) (got \(partialFrameBudgetBytes)); 268435456 suits most servers")
        }
        if !(1024 ... (1 << 20)).contains(minFrameBytesPerSecond) {
            fail("minFrameBytesPerSecond", "must be from 1024 to 1048576 bytes per second (got \(minFrameBytesPerSecond)); keep it below your slowest agent's uplink")
        }
        let minimumQueue = ProtocolLimits.ceilingFramePayload
        if !(minimumQueue ... (1 << 32)).contains(sessionQueueBytes) {
            fail("sessionQueueBytes", "must be from \(minimumQueue) (one largest frame) to 4294967296 (4 GiB) (got \(sessionQueueBytes))")
        }
        if !(0 ... 1000).contains(readCoalescingMillis) {
            fail("readCoalescingMillis", "must be from 0 (off) to 1000 milliseconds (got \(readCoalescingMillis)); 200 suits live agents")
        }
        if let days = retention.maxAgeDays, !(days.isFinite && days > 0) {
            fail("retention.maxAgeDays", "must be a positive number of days (got \(days)), or null to keep recordings regardless of age")
        }
        if let bytes = retention.maxTotalBytes, bytes <= 0 {
            fail("retention.maxTotalBytes", "must be a positive number of bytes (got \(bytes)), or null for no size limit")
        }
        if !(shutdownGraceSeconds.isFinite && shutdownGraceSeconds >= 0 && shutdownGraceSeconds <= 600) {
            fail("shutdownGraceSeconds", "must be from 0 to 600 seconds (got \(shutdownGraceSeconds))")
        }
        found += webhookProblems()
        return found
    }

    static let renewServerCertificate = "issue a new one with `recordctl ca issue server --host NAME` and restart the server"

    /// Valid but risky choices the server should log at startup.
    public var warnings: [String] {
        var list: [String] = []
        if insecurePlaintext {
            list.append("insecurePlaintext is on: agents connect WITHOUT TLS, so recordings and credentials cross the network " +
                        "unencrypted and unauthenticated. Use this for development only.")
        }
        if bearerTokens != nil && tls.requireClientCertificate && !insecurePlaintext {
            list.append("bearerTokens is set but tls.requireClientCertificate is true, so the token file is ignored")
        }
        if fsync == .none {
            list.append("fsync is \"none\": a power cut can lose samples the agents were told are safe")
        }
        if !insecurePlaintext, let validity = CertificateValidity.read(pemFile: tls.certificate),
           let warning = validity.renewalWarning(at: Date(), file: tls.certificate, renew: Self.renewServerCertificate) {
            list.append("tls.certificate: \(warning)")
        }
        if admin.enabled && !Self.isLoopback(admin.host) {
            list.append("the admin API listens on \(admin.host), not only on loopback; make sure a firewall limits who can reach it")
        }
        if admin.enabled, admin.token == nil, let file = admin.tokenFile, Self.isGroupOrWorldReadable(file) {
            list.append("\(file) (admin.tokenFile) is readable by group or others; chmod 600 it")
        }
        return list
    }

    // MARK: Derived values

    /// The admin token from `admin.token` or the content of `admin.tokenFile` (whitespace
    /// trimmed); nil when the admin API is disabled.
    public func adminToken() throws(ConfigurationError) -> String? {
        guard admin.enabled else { return nil }
        if let token = admin.token { return token }
        guard let file = admin.tokenFile else { return nil }
        return try Self.readSecret(file, field: "admin.tokenFile")
    }

    /// Reads `bearerTokens`: a JSON object mapping token → agent id. Every agent id must be a
    /// valid identifier and every token non-empty. Empty when no file is configured.
    func loadBearerTokens() throws(ConfigurationError) -> [String: String] {
        guard let file = bearerTokens else { return [:] }
        let text = try Self.readSecret(file, field: "bearerTokens")
        let mapping: [String: String]
        do { mapping = try JSONDecoder().decode([String: String].self, from: Data(text.utf8)) } catch {
            throw ConfigurationError(.invalidValue, field: "bearerTokens",
                                     "\(file) must hold a JSON object mapping token to agent id, e.g. {\"<token>\": \"camera-1\"}")
        }
        for (token, agent) in mapping.sorted(by: { $0.value < $1.value }) {
            if token.isEmpty { throw ConfigurationError(.invalidValue, field: "bearerTokens", "\(file) has an empty token for agent \"\(agent)\"") }
            do { _ = try Identifier(validating: agent) } catch {
                throw ConfigurationError(.invalidValue, field: "bearerTokens",
                                         "\(file) maps a token to \"\(agent)\", which is not a valid agent id " +
                                         "(1…64 of [A-Za-z0-9._-] starting with a letter or digit)")
            }
        }
        return mapping
    }

    /// Where the catalog lives (`catalog`, checked by `problems()`).
    public func catalogLocation() throws(ConfigurationError) -> CatalogLocation {
        do { return try CatalogLocation(parsing: catalog) } catch {
            throw ConfigurationError(.invalidValue, field: "catalog", error.description)
        }
    }

    /// The storage layout for `dataDirectory`.
    func storageLayout() throws(StorageError) -> StorageLayout {
        try StorageLayout(dataDirectory: dataDirectory)
    }

    /// The retention settings as a policy (off unless a limit is set).
    var retentionPolicy: RetentionPolicy {
        RetentionPolicy(maxAge: retention.maxAgeDays.map { $0 * 86_400 }, maxTotalBytes: retention.maxTotalBytes)
    }

    /// How sessions record, as the session layer takes it: the one derivation, used by the
    /// server (``RecordServer``) and tested (ConfigurationTests).
    var sessionSettings: SessionSettings {
        var settings = SessionSettings()
        settings.fragmentDuration = Int64((fragmentSeconds * 1e9).rounded())
        settings.durability = fsync == .fragment ? .fsyncEveryFragment : .none
        settings.maxSegmentDuration = segment.maxSeconds.map { Int64(($0 * 1e9).rounded()) }
        settings.maxSegmentBytes = segment.maxBytes
        settings.maxQueuedBytesPerTrack = sessionQueueBytes
        settings.failSessionOnTrackError = failSessionOnTrackError
        settings.resumeWindow = .seconds(resumeWindowSeconds)
        return settings
    }

    /// What one agent connection may make the server hold or wait for.
    var ingestBudgets: IngestBudgets {
        var budgets = IngestBudgets()
        budgets.partialFrameBytes = partialFrameBudgetBytes
        budgets.minFrameBytesPerSecond = minFrameBytesPerSecond
        return budgets
    }

    /// `shutdownGraceSeconds` as a duration.
    var shutdownGrace: Duration { .milliseconds(Int64((shutdownGraceSeconds * 1000).rounded())) }

    // MARK: Checks

    private func checkHost(_ host: String, field: String, _ fail: (String, String) -> Void) {
        if host.isEmpty {
            fail(field, "must not be empty; use 0.0.0.0 (every interface) or 127.0.0.1 (this host only)")
        } else if host.contains(where: { $0.isWhitespace || $0 == "/" || $0 == "[" || $0 == "]" }) {
            fail(field, "\"\(host)\" is not an address or host name (IPv6 addresses go without brackets here)")
        }
    }

    private func checkPort(_ port: Int, field: String, _ fail: (String, String) -> Void) {
        // 0 asks the kernel for a free port (tests, embedding); the log names the one bound.
        if !(0 ... 65535).contains(port) { fail(field, "must be from 0 to 65535 (got \(port)); 0 picks a free port") }
    }

    private func checkReadableFile(_ path: String, field: String, what: String, _ fail: (String, String) -> Void) {
        if let problem = Self.readableFileProblem(path) {
            fail(field, "\(problem); point it at \(what) (or, for development only, set insecurePlaintext)")
        }
    }

    static func readableFileProblem(_ path: String) -> String? {
        if path.isEmpty { return "is empty" }
        var info = stat()
        guard stat(path, &info) == 0 else { return "cannot use \(path): \(String(cString: strerror(errno)))" }
        guard info.st_mode & S_IFMT == S_IFREG else { return "\(path) is not a regular file" }
        guard access(path, R_OK) == 0 else { return "cannot read \(path): \(String(cString: strerror(errno)))" }
        return nil
    }

    static func readSecret(_ path: String, field: String) throws(ConfigurationError) -> String {
        if let problem = readableFileProblem(path) { throw ConfigurationError(.invalidValue, field: field, problem) }
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
            throw ConfigurationError(.invalidValue, field: field, "cannot read \(path) as UTF-8 text")
        }
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw ConfigurationError(.invalidValue, field: field, "\(path) is empty") }
        return trimmed
    }

    /// Short tokens can be guessed; whitespace inside one breaks the HTTP header.
    static func tokenProblem(_ token: String) -> String? {
        if token.count < 16 {
            return "is too short (\(token.count) characters); use at least 16, e.g. the output of `openssl rand -hex 32`"
        }
        if token.contains(where: { $0.isWhitespace || !$0.isASCII }) {
            return "must be printable ASCII without spaces, e.g. the output of `openssl rand -hex 32`"
        }
        return nil
    }

    static func isWildcard(_ host: String) -> Bool { host == "0.0.0.0" || host == "::" }

    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    static func isGroupOrWorldReadable(_ path: String) -> Bool {
        var info = stat()
        guard stat(path, &info) == 0 else { return false }
        return info.st_mode & 0o044 != 0
    }
}

public import Foundation
import Shared

extension ServerConfiguration {
    /// Values given on the command line; each non-nil one replaces the file's value.
    public struct Overrides: Sendable, Equatable {
        /// Ingest address, `host:port` (`[v6]:port` for IPv6).
        var listen: String?
        /// Admin API address, `host:port`.
        var adminListen: String?
        var dataDirectory: String?
        /// Replaces `catalog` (`sqlite` or a `postgresql://` URL).
        var catalog: String?
        /// Replace `objectStore.url`, `.accessKeyFile`, `.secretKeyFile` (all three when the file has no `objectStore`).
        var objectStore: String?
        var objectStoreAccessKeyFile: String?
        var objectStoreSecretKeyFile: String?
        var caCertificate: String?
        var certificate: String?
        var privateKey: String?
        var revocationList: String?
        /// Replaces both `admin.token` and `admin.tokenFile` (only one may be set).
        var adminToken: String?
        /// Replaces both `admin.token` and `admin.tokenFile` (only one may be set).
        var adminTokenFile: String?
        var insecurePlaintext: Bool?
        var resumeWindowSeconds: Int?
        var logLevel: String?
        /// Replaces `admin.tls`.
        var adminTLS: Bool?
        /// Replaces `webhooks`: each `URL,secret-file=PATH[,events=TYPE+TYPE…]` (``Webhook/parse(_:field:)``).
        var webhooks: [String]?

        init(listen: String? = nil, adminListen: String? = nil, dataDirectory: String? = nil, caCertificate: String? = nil,
                    certificate: String? = nil, privateKey: String? = nil, revocationList: String? = nil, adminToken: String? = nil,
                    adminTokenFile: String? = nil, insecurePlaintext: Bool? = nil, resumeWindowSeconds: Int? = nil, logLevel: String? = nil,
                    webhooks: [String]? = nil, adminTLS: Bool? = nil, catalog: String? = nil, objectStore: String? = nil,
                    objectStoreAccessKeyFile: String? = nil, objectStoreSecretKeyFile: String? = nil) {
            self.listen = listen
            self.adminListen = adminListen
            self.dataDirectory = dataDirectory
            self.caCertificate = caCertificate
            self.certificate = certificate
            self.privateKey = privateKey
            self.revocationList = revocationList
            self.adminToken = adminToken
            self.adminTokenFile = adminTokenFile
            self.insecurePlaintext = insecurePlaintext
            self.resumeWindowSeconds = resumeWindowSeconds
            self.logLevel = logLevel
            self.webhooks = webhooks
            self.adminTLS = adminTLS
            self.catalog = catalog
            self.objectStore = objectStore
            self.objectStoreAccessKeyFile = objectStoreAccessKeyFile
            self.objectStoreSecretKeyFile = objectStoreSecretKeyFile
        }
    }

    /// Reads a JSON configuration file. Missing keys take their defaults; unknown keys, wrong
    /// types and unknown enumerated values are errors naming the field. Relative paths in the
    /// file are taken relative to the file's own directory, so a configuration directory can
    /// be moved as a whole. Does not validate: merge the command line first, then `validate()`.
    public static func load(path: String) throws(ConfigurationError) -> ServerConfiguration {
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw ConfigurationError(.unreadableFile, field: nil,
                                     "cannot read \(path): \(Self.reason(error)); check the path and that the server's user may read it")
        }
        var config = try decode(data, source: path)
        let base = URL(fileURLWithPath: path).deletingLastPathComponent().path
        config.resolveRelativePaths(against: base)
        return config
    }

    /// Decodes configuration JSON (see `load(path:)`); `source` names it in error messages.
    /// Relative paths are left as they are.
    public static func decode(_ data: Data, source: String = "the configuration") throws(ConfigurationError) -> ServerConfiguration {
        do {
            return try JSONDecoder().decode(ServerConfiguration.self, from: data)
        } catch let error as ConfigurationError {
            throw error
        } catch DecodingError.typeMismatch(let type, let context) {
            let field = context.codingPath.isEmpty ? nil : StrictDecoding.path(context.codingPath)
            throw ConfigurationError(.wrongType, field: field, field == nil ? "\(source) must hold a JSON object" :
                                     "must be \(describe(type)); correct the value's type")
        } catch DecodingError.valueNotFound(let type, let context) {
            throw ConfigurationError(.wrongType, field: StrictDecoding.path(context.codingPath), "must be \(describe(type))")
        } catch DecodingError.keyNotFound(let key, let context) {
            throw ConfigurationError(.invalidValue, field: StrictDecoding.path(context.codingPath, key), "is required")
        } catch DecodingError.dataCorrupted(let context) {
            if context.codingPath.isEmpty {
                let detail = context.underlyingError.map(reason) ?? context.debugDescription
                throw ConfigurationError(.malformedJSON, field: nil, "\(source) is not valid JSON: \(detail)")
            }
            // For example a number too large for its field, or a fraction where an integer belongs.
            throw ConfigurationError(.wrongType, field: StrictDecoding.path(context.codingPath),
                                     "has an unusable value: \(context.debugDescription)")
        } catch {
            throw ConfigurationError(.malformedJSON, field: nil, "\(source) cannot be decoded: \(reason(error))")
        }
    }

    /// This configuration with the command-line values applied. Relative paths given on the
    /// command line are taken relative to `workingDirectory` (the process's by default), as a
    /// shell user expects.
    /// - Throws: `.invalidValue` for an address that is not `host:port` or an unknown log level.
    public func merging(overrides: Overrides,
                        workingDirectory: String = FileManager.default.currentDirectoryPath) throws(ConfigurationError) -> ServerConfiguration {
        var config = self
        func absolute(_ path: String) -> String { Self.absolute(path, base: workingDirectory) }
        if let listen = overrides.listen { config.ingest = try Self.parseAddress(listen, field: "--listen") }
        if let adminListen = overrides.adminListen {
            let address = try Self.parseAddress(adminListen, field: "--admin-listen")
            config.admin.host = address.host
            config.admin.port = address.port
        }
        if let value = overrides.dataDirectory { config.dataDirectory = absolute(value) }
        if let value = overrides.catalog { config.catalog = value }
        if overrides.objectStore != nil || overrides.objectStoreAccessKeyFile != nil || overrides.objectStoreSecretKeyFile != nil {
            var store = config.objectStore ?? ObjectStore(url: "", accessKeyFile: "", secretKeyFile: "")
            if let value = overrides.objectStore { store.url = value }
            if let value = overrides.objectStoreAccessKeyFile { store.accessKeyFile = absolute(value) }
            if let value = overrides.objectStoreSecretKeyFile { store.secretKeyFile = absolute(value) }
            config.objectStore = store
        }
        if let value = overrides.caCertificate { config.tls.caCertificate = absolute(value) }
        if let value = overrides.certificate { config.tls.certificate = absolute(value) }
        if let value = overrides.privateKey { config.tls.privateKey = absolute(value) }
        if let value = overrides.revocationList { config.tls.revocationList = absolute(value) }
        // The command line wins over the file whichever form the file used, so clear the other.
        if let value = overrides.adminToken {
            config.admin.token = value
            config.admin.tokenFile = nil
        }
        if let value = overrides.adminTokenFile {
            config.admin.tokenFile = absolute(value)
            config.admin.token = nil
        }
        if let value = overrides.adminTLS { config.admin.tls = value }
        if let value = overrides.insecurePlaintext { config.insecurePlaintext = value }
        if let value = overrides.resumeWindowSeconds { config.resumeWindowSeconds = value }
        if let value = overrides.logLevel { config.logLevel = try Self.parseLogLevel(value, field: "--log-level") }
        if let values = overrides.webhooks {
            config.webhooks = []
            for value in values {
                var webhook = try Webhook.parse(value, field: "--webhook")
                webhook.secretFile = absolute(webhook.secretFile)
                config.webhooks.append(webhook)
            }
        }
        return config
    }

    /// Parses `host:port`, `[v6-address]:port`. `field` names the source in errors.
    static func parseAddress(_ text: String, field: String) throws(ConfigurationError) -> Listener {
        let host: Substring, portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw ConfigurationError(.invalidValue, field: field, "\"\(text)\" is not [address]:port, e.g. [::]:7443")
            }
            host = text[text.index(after: text.startIndex) ..< close]
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":") else {
                throw ConfigurationError(.invalidValue, field: field, "\"\(text)\" has no port; write host:port, e.g. 0.0.0.0:7443")
            }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            guard !host.contains(":") else {
                throw ConfigurationError(.invalidValue, field: field, "write IPv6 addresses in brackets, e.g. [::]:7443 (got \"\(text)\")")
            }
        }
        guard !host.isEmpty else {
            throw ConfigurationError(.invalidValue, field: field, "\"\(text)\" has no host; use 0.0.0.0:PORT for every interface")
        }
        guard let port = Int(portText), (0 ... 65535).contains(port) else {
            throw ConfigurationError(.invalidValue, field: field, "\"\(portText)\" is not a port; use a number from 0 to 65535 (0 picks a free port)")
        }
        return Listener(host: String(host), port: port)
    }

    mutating func resolveRelativePaths(against base: String) {
        dataDirectory = Self.absolute(dataDirectory, base: base)
        tls.caCertificate = Self.absolute(tls.caCertificate, base: base)
        tls.certificate = Self.absolute(tls.certificate, base: base)
        tls.privateKey = Self.absolute(tls.privateKey, base: base)
        tls.revocationList = tls.revocationList.map { Self.absolute($0, base: base) }
        bearerTokens = bearerTokens.map { Self.absolute($0, base: base) }
        admin.tokenFile = admin.tokenFile.map { Self.absolute($0, base: base) }
        for n in webhooks.indices { webhooks[n].secretFile = Self.absolute(webhooks[n].secretFile, base: base) }
    }

    static func absolute(_ path: String, base: String) -> String {
        // Empty stays empty so validation can say "must not be empty" rather than misreport.
        guard !path.isEmpty, !path.hasPrefix("/") else { return path }
        return (base.hasSuffix("/") ? base : base + "/") + path
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: return "a string"
        case is Bool.Type: return "true or false"
        case is Int.Type, is Int64.Type: return "an integer"
        case is Double.Type: return "a number"
        default:
            return String(describing: type).hasPrefix("Dictionary") ? "a JSON object" : "\(type)"
        }
    }

    private static func reason(_ error: any Error) -> String {
        let ns = error as NSError
        if let underlying = ns.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
            return String(cString: strerror(Int32(underlying.code)))
        }
        if let debug = ns.userInfo[NSDebugDescriptionErrorKey] as? String { return debug }
        return ns.localizedDescription
    }
}

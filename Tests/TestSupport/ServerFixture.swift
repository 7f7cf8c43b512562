import Foundation
import Logging
import NIOSSL
import RecordServerCore
import RecordingTLS
import Shared

/// A real record-server on loopback, in this process: a fresh CA, server certificate and data
/// directory in a temporary directory (removed with the fixture), ingest over mutual TLS and
/// the admin API with ``adminToken`` (unless `adminToken` is nil), on ports the kernel picks. The one real-server fixture of
/// the server, agent and recordctl tests; each target adds what only it needs in an extension.
public final class ServerFixture: @unchecked Sendable {
    public static let adminToken = "test-admin-token-0123456789abcdef"

    public let scratch: TemporaryDirectory
    public let pki: TestServerPKI
    public var configuration: ServerConfiguration
    /// What the server's resume windows run on: set a ``ManualServerClock`` before ``start(logger:)``
    /// to move time instead of waiting for it.
    public var clock: any ServerClock = SystemServerClock()
    public private(set) var server: RecordServer?
    public private(set) var running: RecordServer.RunningServer?

    public var directory: String { scratch.path }
    public var ca: CertificateAuthority { pki.ca }
    public var caPath: String { pki.caPath }
    public var dataDirectory: String { configuration.dataDirectory }
    /// A file holding ``adminToken``, for `RECORDCTL_TOKEN_FILE` and `--token-file`.
    public var adminTokenFile: String { directory + "/admin.token" }

    public init(prefix: String = "server", resumeWindowSeconds: Int = 30, adminToken: String? = ServerFixture.adminToken) throws {
        scratch = try TemporaryDirectory(prefix: prefix)
        pki = try TestServerPKI(directory: scratch.path)
        configuration = pki.serverConfiguration(adminToken: adminToken, resumeWindowSeconds: resumeWindowSeconds)
        if let adminToken { try scratch.write(adminToken + "\n", to: "admin.token") }
    }

    /// Warnings and above: what a test would want to see when it fails.
    public static var logger: Logger {
        var logger = Logger(label: "test-server")
        logger.logLevel = .warning
        return logger
    }

    /// Starts the server; returns its ingest port.
    @discardableResult
    public func start(logger: Logger = ServerFixture.logger) async throws -> Int {
        try FileManager.default.createDirectory(atPath: configuration.dataDirectory, withIntermediateDirectories: true)
        let server = try RecordServer(configuration: configuration, logger: logger, clock: clock)
        self.server = server
        let running = try await server.start()
        self.running = running
        return running.ingestPort
    }

    public func stop() async { await running?.stop() }

    public var adminURL: String { "http://127.0.0.1:\(running?.adminPort ?? 0)" }

    /// The certificate and key files of agent `agentID`, issued by this fixture's CA and written
    /// next to it the first time they are asked for.
    public func writeAgentCertificate(_ agentID: String) throws -> (certificate: String, privateKey: String) {
        let paths = (certificate: directory + "/\(agentID).pem", privateKey: directory + "/\(agentID)-key.pem")
        if !FileManager.default.fileExists(atPath: paths.certificate) || !FileManager.default.fileExists(atPath: paths.privateKey) {
            try ca.issueAgentCertificate(agentID: agentID).write(certPath: paths.certificate, keyPath: paths.privateKey)
        }
        return paths
    }

    /// TLS for an agent with a certificate from this fixture's CA (or another CA), in memory.
    public func agentTLS(_ agentID: String, from issuer: CertificateAuthority? = nil, notBefore: Date? = nil,
                         validity: TimeInterval = 86400) throws -> TLSConfiguration {
        let cert = try (issuer ?? ca).issueAgentCertificate(agentID: agentID, validity: validity, notBefore: notBefore)
        return try TLSConfigurations.client(caPEM: ca.certificatePEM, certificatePEM: cert.certificatePEM, privateKeyPEM: cert.privateKeyPEM,
                                            serverHostname: "localhost")
    }

    /// TLS for a client that trusts this CA and has no certificate.
    public func anonymousTLS() throws -> TLSConfiguration {
        try TLSConfigurations.client(caPEM: ca.certificatePEM, certificatePEM: nil, privateKeyPEM: nil, serverHostname: "localhost")
    }

    public func catalog() throws -> Catalog { try Catalog(path: configuration.dataDirectory + "/catalog.sqlite") }

    public func recordings(session: String) throws -> [RecordingRecord] { try catalog().recordings(sessionID: session) }

    /// The MP4 files under the data directory, sorted.
    public func recordingFiles() -> [String] {
        let e = FileManager.default.enumerator(atPath: dataDirectory)
        var found: [String] = []
        while let p = e?.nextObject() as? String { if p.hasSuffix(".mp4") { found.append(dataDirectory + "/" + p) } }
        return found.sorted()
    }
}

import Foundation
import Logging
import NIOSSL
@testable import RecordServerCore
import RecordingTLS
import Shared
import TestSupport

/// A real record-server on loopback with a fresh CA, server and agent certificates, in a
/// temporary directory; removed when the test ends.
final class ServerFixture: @unchecked Sendable {
    let directory: String
    let ca: CertificateAuthority
    let caPath: String
    var configuration: ServerConfiguration
    private(set) var server: RecordServer?
    private(set) var running: RecordServer.RunningServer?
    static let adminToken = "test-admin-token-0123456789abcdef"

    init(resumeWindowSeconds: Int = 30) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("rs-\(UUID().uuidString)").path
        let pki = try TestServerPKI(directory: directory)
        ca = pki.ca
        caPath = pki.caPath
        configuration = pki.serverConfiguration(adminToken: Self.adminToken, resumeWindowSeconds: resumeWindowSeconds)
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    static var logger: Logger {
        var logger = Logger(label: "test-server")
        logger.logLevel = .warning
        return logger
    }

    func start() async throws -> Int {
        try FileManager.default.createDirectory(atPath: configuration.dataDirectory, withIntermediateDirectories: true)
        let server = try RecordServer(configuration: configuration, logger: Self.logger)
        self.server = server
        running = try await server.start()
        return running!.ingestPort
    }

    func stop() async { await running?.stop() }

    /// TLS for an agent with a certificate from this fixture's CA (or another CA).
    func agentTLS(_ agentID: String, from issuer: CertificateAuthority? = nil, notBefore: Date? = nil, validity: TimeInterval = 86400) throws -> TLSConfiguration {
        let cert = try (issuer ?? ca).issueAgentCertificate(agentID: agentID, validity: validity, notBefore: notBefore)
        return try TLSConfigurations.client(caPEM: ca.certificatePEM, certificatePEM: cert.certificatePEM, privateKeyPEM: cert.privateKeyPEM,
                                            serverHostname: "localhost")
    }

    func anonymousTLS() throws -> TLSConfiguration {
        try TLSConfigurations.client(caPEM: ca.certificatePEM, certificatePEM: nil, privateKeyPEM: nil, serverHostname: "localhost")
    }

    /// Connects and completes the handshake as `agentID`.
    func connectAgent(_ agentID: String, port: Int) async throws -> TestAgent {
        let agent = try await TestAgent.connect(port: port, tls: try agentTLS(agentID))
        _ = try await agent.hello(agentID: try Identifier(validating: agentID))
        return agent
    }

    func recordings(session: String) throws -> [RecordingRecord] {
        try Catalog(path: configuration.dataDirectory + "/catalog.sqlite").recordings(sessionID: session)
    }

    func catalog() throws -> Catalog { try Catalog(path: configuration.dataDirectory + "/catalog.sqlite") }
}

extension SessionContent {
    /// The samples with the given tracks' samples after `cutoff` removed, renumbered without
    /// gaps (sequence numbers never have gaps on the wire).
    func dropping(track: UInt8, afterIndex cutoff: Int) -> SessionContent {
        var seen = 0
        var kept: [Sample] = []
        for s in samples {
            if s.track == track {
                seen += 1
                if seen > cutoff { continue }
            }
            var copy = s
            copy.sequence = UInt64(kept.count + 1)
            kept.append(copy)
        }
        var result = self
        result.samples = kept
        result.counts[track] = min(cutoff, counts[track] ?? 0)
        return result
    }
}

import Foundation
import Logging
import RecordServerCore
import RecordingTLS
import Shared
import TestSupport
@testable import CaptureAgentCore

/// A record-server's CA, certificates and configuration (TestSupport's ``ServerFixture``, not
/// started: each test starts the server in this process or as a child process), and the
/// settings of agent `cam-e2e`.
final class EndToEndFixture: @unchecked Sendable {
    let server: ServerFixture
    var directory: TemporaryDirectory { server.scratch }
    var ca: CertificateAuthority { server.ca }
    var caPath: String { server.caPath }
    var dataDirectory: String { server.dataDirectory }
    var serverConfiguration: ServerConfiguration { server.configuration }

    /// Agent `cam-e2e`'s certificate and key files.
    let agentCertificate: (certificate: String, privateKey: String)

    init() throws {
        server = try ServerFixture(prefix: "capture-agent-tests", resumeWindowSeconds: 60, adminToken: nil)
        agentCertificate = try server.writeAgentCertificate("cam-e2e")
    }

    /// Agent `cam-e2e` with two 320x240 test cameras and test audio, recording `seconds`.
    func agentSettings(port: Int, seconds: Double, sessionID: Identifier) throws -> AgentSettings {
        try server.agentSettings(agentID: "cam-e2e", port: port,
                                 sources: ["front=test:320x240@30", "back=test:320x240@30", "tone=test:audio"],
                                 record: true, sessionID: sessionID, duration: seconds)
    }

    /// A record-server in this process on ``serverConfiguration`` (or on `configuration`), started.
    func startServer(_ configuration: ServerConfiguration? = nil) async throws -> RecordServer.RunningServer {
        try await RecordServer(configuration: configuration ?? serverConfiguration, logger: Self.logger).start()
    }

    /// The finished recordings (MP4 files) under the data directory.
    func recordings() -> [String] { server.recordingFiles() }

    static var logger: Logger { ServerFixture.logger }
}

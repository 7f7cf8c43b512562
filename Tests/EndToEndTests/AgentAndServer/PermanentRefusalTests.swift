import Foundation
import Logging
import NIOPosix
import NIOSSL
@testable import CaptureAgentCore
import RecordServerCore
import RecordingTLS
import Shared
import Testing

/// A server that refuses this agent for good (a foreign or revoked certificate, a port that is
/// not an MCRP port) ends the agent with one clear message and exit status 77, instead of a
/// reconnect and an error line every few seconds forever (issue 13, finding 7).
@Suite("Permanent refusals end the agent", .serialized)
struct PermanentRefusalTests {
    /// Runs the agent against `port` until it gives up (bounded: it must, within 60 s).
    private func refusal(_ settings: AgentSettings) async throws -> AgentRuntimeError {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let agent = try AgentRuntime(settings: settings, logger: EndToEndFixture.logger, group: group)
        let outcome = try await withThrowingTaskGroup(of: AgentRuntimeError?.self) { tasks in
            tasks.addTask {
                do { try await agent.run() } catch let error as AgentRuntimeError { return error }
                return nil
            }
            tasks.addTask {
                try await Task.sleep(for: .seconds(60))
                agent.shutdown()
                agent.shutdown()
                return nil
            }
            defer { tasks.cancelAll() }
            return try await tasks.next() ?? nil
        }
        try await group.shutdownGracefully()
        return try #require(outcome, "the agent kept retrying a refusal that cannot change")
    }

    @Test func anAgentCertificateFromAnotherCAIsRefusedForGood() async throws {
        let fixture = try EndToEndFixture()
        let running = try await fixture.startServer()
        defer { Task { await running.stop() } }
        let foreign = try CertificateAuthority.create().issueAgentCertificate(agentID: "cam-e2e")
        try foreign.write(certPath: fixture.directory.path + "/foreign.pem", keyPath: fixture.directory.path + "/foreign-key.pem")
        var settings = try fixture.agentSettings(port: running.ingestPort, seconds: 5, sessionID: "refused-1")
        settings.tls = try TLSConfigurations.client(caPEMPath: fixture.caPath, certificatePEMPath: fixture.directory.path + "/foreign.pem",
                                                    privateKeyPEMPath: fixture.directory.path + "/foreign-key.pem", serverHostname: "127.0.0.1")
        let error = try await refusal(settings)
        #expect(error.exitCode == ConnectionFailure.permanentExitCode)
        #expect(error.message.contains("refused this agent's certificate"), "\(error.message)")
        #expect(!error.message.contains("/.build/") && !error.message.contains("[IPv4]"), "no library debug text: \(error.message)")
    }

    @Test func theAdminPortInsteadOfTheAgentPortIsNamed() async throws {
        let fixture = try EndToEndFixture()
        var config = fixture.serverConfiguration
        config.admin = .init(enabled: true, host: "127.0.0.1", port: 0, token: "admin-token-0123456789abcdef")
        let running = try await fixture.startServer(config)
        defer { Task { await running.stop() } }
        let error = try await refusal(try fixture.agentSettings(port: try #require(running.adminPort), seconds: 5, sessionID: "refused-2"))
        #expect(error.exitCode == ConnectionFailure.permanentExitCode)
        #expect(error.message.contains("does not speak TLS") && error.message.contains("admin port"), "\(error.message)")
    }

    /// With several servers, one that refuses for good is left out and the others record; the
    /// agent stops only once every server has refused it, and then names each.
    @Test func oneRefusingServerInTheListIsLeftOutAndOnlyAllRefusingStopsTheAgent() async throws {
        let fixture = try EndToEndFixture()
        var config = fixture.serverConfiguration
        config.admin = .init(enabled: true, host: "127.0.0.1", port: 0, token: "admin-token-0123456789abcdef")
        let running = try await fixture.startServer(config)
        defer { Task { await running.stop() } }
        let adminPort = try #require(running.adminPort)
        let notAnAgentPort = ServerAddress(host: "127.0.0.1", port: adminPort, tlsHostname: nil)

        var settings = try fixture.agentSettings(port: running.ingestPort, seconds: 2, sessionID: "refused-one-of-two")
        settings.servers = [notAnAgentPort, ServerAddress(host: "127.0.0.1", port: running.ingestPort, tlsHostname: nil)]
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        try await AgentRuntime(settings: settings, logger: EndToEndFixture.logger, group: group).run()
        try await group.shutdownGracefully()
        #expect(fixture.recordings().contains { $0.contains("refused-one-of-two") }, "\(fixture.recordings())")

        settings = try fixture.agentSettings(port: adminPort, seconds: 2, sessionID: "refused-two-of-two")
        settings.servers = [notAnAgentPort, ServerAddress(host: "localhost", port: adminPort, tlsHostname: "localhost")]
        let error = try await refusal(settings)
        #expect(error.exitCode == ConnectionFailure.permanentExitCode)
        #expect(error.message.hasPrefix("every server refused this agent: 127.0.0.1:\(adminPort): ") && error.message.contains("; localhost:\(adminPort): "),
                "\(error.message)")
    }

    @Test func aRevokedAgentIsRefusedForGood() async throws {
        let fixture = try EndToEndFixture()
        var list = RevocationList()
        let certificate = try NIOSSLCertificateLoader.first(fixture.agentCertificate.certificate)
        try list.revoke(serial: PeerIdentity.serialNumber(of: certificate), agentID: "cam-e2e")
        let revoked = fixture.directory.path + "/revoked.json"
        try list.save(path: revoked)
        var config = fixture.serverConfiguration
        config.tls.revocationList = revoked
        let running = try await fixture.startServer(config)
        defer { Task { await running.stop() } }
        let error = try await refusal(try fixture.agentSettings(port: running.ingestPort, seconds: 5, sessionID: "refused-3"))
        #expect(error.exitCode == ConnectionFailure.permanentExitCode)
        #expect(error.message.contains("refused this agent"), "\(error.message)")
    }

    /// A certificate that expired while the agent ran: the server's refusal names the date the
    /// agent read from its own certificate.
    @Test func anExpiredAgentCertificateIsRefusedForGoodWithItsDate() async throws {
        let fixture = try EndToEndFixture()
        let running = try await fixture.startServer()
        defer { Task { await running.stop() } }
        let expired = try fixture.ca.issueAgentCertificate(agentID: "cam-e2e", validity: 86_400,
                                                           notBefore: Date().addingTimeInterval(-2 * 86_400))
        let cert = fixture.directory.path + "/expired.pem", key = fixture.directory.path + "/expired-key.pem"
        try expired.write(certPath: cert, keyPath: key)
        let validity = try #require(CertificateValidity.read(pemFile: cert))
        #expect(abs(validity.notAfter.timeIntervalSince(expired.notAfter)) < 1)
        var settings = try fixture.agentSettings(port: running.ingestPort, seconds: 5, sessionID: "refused-4")
        settings.tls = try TLSConfigurations.client(caPEMPath: fixture.caPath, certificatePEMPath: cert, privateKeyPEMPath: key,
                                                    serverHostname: "127.0.0.1")
        settings.certificateExpiry = validity.notAfter
        let error = try await refusal(settings)
        #expect(error.exitCode == ConnectionFailure.permanentExitCode)
        #expect(error.message.contains("expired on \(CertificateValidity.format(validity.notAfter))"), "\(error.message)")
    }
}

private enum NIOSSLCertificateLoader {
    static func first(_ path: String) throws -> NIOSSLCertificate {
        try #require(try NIOSSLCertificate.fromPEMFile(path).first)
    }
}

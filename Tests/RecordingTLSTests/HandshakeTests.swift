import Foundation
import NIOSSL
import RecordingTLS
import Testing
import TestSupport

/// Real TLS 1.3 connections over loopback TCP between NIOSSL server and client handlers.
@Suite("TLS handshakes")
struct HandshakeTests {
    @Test("CA-issued server and agent certificates: handshake succeeds, server sees the agent id")
    func mutualTLSSucceeds() async throws {
        let pki = try TestPKI(agentID: "cam-front.1")
        let outcome = try await runHandshake(
            server: pki.serverConfiguration(),
            client: pki.clientConfiguration(serverHostname: "localhost"),
            serverHostname: "localhost"
        )
        let server = try outcome.server.get()
        _ = try outcome.client.get()
        let peer = try #require(server.peerCertificate)
        #expect(try PeerIdentity.agentID(from: peer) == "cam-front.1")
        #expect(PeerIdentity.serialNumber(of: peer) == pki.agent.serialNumber)
        #expect(PeerIdentity.notAfter(of: peer) == pki.agent.notAfter)
    }

    @Test("ALPN negotiates mcrp/1 on both sides")
    func alpnNegotiated() async throws {
        let pki = try TestPKI()
        let outcome = try await runHandshake(server: pki.serverConfiguration(), client: pki.clientConfiguration())
        #expect(try outcome.server.get().negotiatedProtocol == "mcrp/1")
        #expect(try outcome.client.get() == "mcrp/1")
        #expect(MCRPTransport.alpnProtocol == "mcrp/1")
    }

    @Test("Client verifies the server's IP SAN when connecting by address")
    func ipAddressVerification() async throws {
        let pki = try TestPKI()
        let ipOnly = try pki.ca.issueServerCertificate(hostnames: [], ipAddresses: ["127.0.0.1"])
        let outcome = try await runHandshake(
            server: pki.serverConfiguration(presenting: ipOnly),
            client: pki.clientConfiguration(serverHostname: "127.0.0.1"),
            serverHostname: "127.0.0.1"
        )
        #expect(outcome.serverAccepted)
        #expect(outcome.clientAccepted)

        // A certificate without 127.0.0.1 does not pass when connecting by that address.
        let otherIP = try pki.ca.issueServerCertificate(hostnames: ["localhost"], ipAddresses: ["10.1.2.3"])
        let refused = try await runHandshake(
            server: pki.serverConfiguration(presenting: otherIP),
            client: pki.clientConfiguration(serverHostname: "127.0.0.1"),
            serverHostname: "127.0.0.1"
        )
        #expect(!refused.clientAccepted)
    }

    @Test("Client refuses a server certificate for another hostname")
    func wrongHostnameRefused() async throws {
        // DNS names only: NIOSSL (RFC 6125) also accepts a certificate whose IP SAN equals
        // the connected address, whatever name was asked for, so the default test server
        // certificate (which lists 127.0.0.1) would match any name here.
        let pki = try TestPKI()
        let named = try pki.ca.issueServerCertificate(hostnames: ["recorder.example.com"])
        let refused = try await runHandshake(
            server: pki.serverConfiguration(presenting: named),
            client: pki.clientConfiguration(serverHostname: "localhost"),
            serverHostname: "localhost"
        )
        // Only the client can notice: NIOSSL checks the name after the TLS handshake has
        // completed on both sides, then closes the connection.
        #expect(!refused.clientAccepted)
        if case .failure(let error) = refused.client {
            #expect(String(describing: error).contains("localhost"))
        }

        let localhost = try pki.ca.issueServerCertificate(hostnames: ["localhost"])
        let accepted = try await runHandshake(
            server: pki.serverConfiguration(presenting: localhost),
            client: pki.clientConfiguration(serverHostname: "localhost"),
            serverHostname: "localhost"
        )
        #expect(accepted.clientAccepted)
    }

    @Test("No client certificate: refused when mutual TLS is required")
    func noClientCertificateRefused() async throws {
        let pki = try TestPKI()
        let outcome = try await runHandshake(
            server: pki.serverConfiguration(),
            client: pki.clientConfiguration(identity: .none)
        )
        #expect(!outcome.serverAccepted)
        #expect(!outcome.clientAccepted)
    }

    @Test("No client certificate: accepted when client certificates are optional")
    func noClientCertificateOptional() async throws {
        let pki = try TestPKI()
        let outcome = try await runHandshake(
            server: pki.serverConfiguration(requireClientCertificate: false),
            client: pki.clientConfiguration(identity: .none)
        )
        let server = try outcome.server.get()
        #expect(server.peerCertificate == nil)
        #expect(outcome.clientAccepted)
    }

    @Test("Optional client certificates are still verified when presented")
    func optionalClientCertificateStillVerified() async throws {
        let pki = try TestPKI()
        let stranger = try TestPKI(agentID: "cam-1", caName: "Other CA")
        let outcome = try await runHandshake(
            server: pki.serverConfiguration(requireClientCertificate: false),
            client: pki.clientConfiguration(identity: .custom(stranger.agent))
        )
        #expect(!outcome.serverAccepted)
        #expect(!outcome.clientAccepted)
    }

    @Test("Agent certificate from another CA: refused")
    func otherCAClientRefused() async throws {
        let pki = try TestPKI()
        let stranger = try TestPKI(agentID: "cam-1", caName: "Recording CA")  // same name, other key
        let outcome = try await runHandshake(
            server: pki.serverConfiguration(),
            client: pki.clientConfiguration(identity: .custom(stranger.agent))
        )
        #expect(!outcome.serverAccepted)
        #expect(!outcome.clientAccepted)
    }

    @Test("Server certificate from another CA: refused by the client")
    func otherCAServerRefused() async throws {
        let pki = try TestPKI()
        let stranger = try TestPKI()
        let outcome = try await runHandshake(
            server: stranger.serverConfiguration(),
            client: pki.clientConfiguration(serverHostname: "localhost"),
            serverHostname: "localhost"
        )
        #expect(!outcome.clientAccepted)
        #expect(!outcome.serverAccepted)
    }

    @Test("Expired agent certificate: refused")
    func expiredAgentRefused() async throws {
        let pki = try TestPKI()
        let expired = try pki.ca.issueAgentCertificate(
            agentID: "cam-1",
            validity: 24 * 3600,
            notBefore: Date().addingTimeInterval(-3 * 24 * 3600)
        )
        #expect(expired.notAfter < Date())
        let outcome = try await runHandshake(
            server: pki.serverConfiguration(),
            client: pki.clientConfiguration(identity: .custom(expired))
        )
        #expect(!outcome.serverAccepted)
        #expect(!outcome.clientAccepted)
    }

    @Test("Agent certificate not yet valid: refused")
    func notYetValidAgentRefused() async throws {
        let pki = try TestPKI()
        let future = try pki.ca.issueAgentCertificate(agentID: "cam-1", notBefore: Date().addingTimeInterval(24 * 3600))
        let outcome = try await runHandshake(
            server: pki.serverConfiguration(),
            client: pki.clientConfiguration(identity: .custom(future))
        )
        #expect(!outcome.serverAccepted)
    }

    @Test("Server certificate used as a client certificate: refused (EKU serverAuth only)")
    func serverCertificateAsClientRefused() async throws {
        let pki = try TestPKI()
        let outcome = try await runHandshake(
            server: pki.serverConfiguration(),
            client: pki.clientConfiguration(identity: .custom(pki.server))
        )
        #expect(!outcome.serverAccepted)
    }

    @Test("Agent certificate used as a server certificate: refused (EKU clientAuth only)")
    func agentCertificateAsServerRefused() async throws {
        let pki = try TestPKI()
        let impostor = try TLSConfigurations.server(
            certificatePEM: pki.agent.certificatePEM,
            privateKeyPEM: pki.agent.privateKeyPEM,
            caPEM: pki.ca.certificatePEM
        )
        let outcome = try await runHandshake(server: impostor, client: pki.clientConfiguration())
        #expect(!outcome.clientAccepted)
    }

    @Test("TLS 1.2-only client: refused")
    func tls12ClientRefused() async throws {
        let pki = try TestPKI()
        var client = try pki.clientConfiguration()
        client.minimumTLSVersion = .tlsv12
        client.maximumTLSVersion = .tlsv12
        let outcome = try await runHandshake(server: pki.serverConfiguration(), client: client)
        #expect(!outcome.serverAccepted)
        #expect(!outcome.clientAccepted)
    }

    @Test("Configurations built from files written by the CA work end to end")
    func filesEndToEnd() async throws {
        let directory = try TemporaryDirectory(prefix: "recording-tls-tests")
        defer { directory.remove() }
        let pki = try TestPKI()
        try pki.ca.write(to: directory.file("ca"))
        try pki.server.write(certPath: directory.file("server/cert.pem"), keyPath: directory.file("server/key.pem"))
        try pki.agent.write(certPath: directory.file("agent/cert.pem"), keyPath: directory.file("agent/key.pem"))
        let ca = directory.file("ca/ca.pem")

        let server = try TLSConfigurations.server(
            certificatePEMPath: directory.file("server/cert.pem"),
            privateKeyPEMPath: directory.file("server/key.pem"),
            caPEMPath: ca
        )
        let client = try TLSConfigurations.client(
            caPEMPath: ca,
            certificatePEMPath: directory.file("agent/cert.pem"),
            privateKeyPEMPath: directory.file("agent/key.pem"),
            serverHostname: "localhost"
        )
        let outcome = try await runHandshake(server: server, client: client, serverHostname: "localhost")
        let peer = try #require(try outcome.server.get().peerCertificate)
        #expect(try PeerIdentity.agentID(from: peer) == pki.agentID)
        #expect(outcome.clientAccepted)
    }
}

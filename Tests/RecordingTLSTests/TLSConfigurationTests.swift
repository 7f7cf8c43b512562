import Foundation
import NIOSSL
import RecordingTLS
import Testing
import TestSupport

@Suite("TLS configurations")
struct TLSConfigurationTests {
    @Test("Server: TLS 1.3 only, ALPN mcrp/1, CA-only trust, client certificate required or optional")
    func serverSettings() throws {
        let pki = try TestPKI()
        let required = try pki.serverConfiguration()
        #expect(required.minimumTLSVersion == .tlsv13)
        #expect(required.maximumTLSVersion == .tlsv13)
        #expect(required.applicationProtocols == ["mcrp/1"])
        #expect(required.certificateVerification == .noHostnameVerification)
        #expect(required.trustRoots == .certificates([try NIOSSLCertificateFromPEM(pki.ca.certificatePEM)]))
        #expect(required.additionalTrustRoots.isEmpty)

        let optional = try pki.serverConfiguration(requireClientCertificate: false)
        #expect(optional.certificateVerification == .optionalVerification)
    }

    @Test("Client: TLS 1.3 only, ALPN, CA-only trust, hostname checked when given")
    func clientSettings() throws {
        let pki = try TestPKI()
        let named = try pki.clientConfiguration(serverHostname: "rec.example")
        #expect(named.minimumTLSVersion == .tlsv13)
        #expect(named.maximumTLSVersion == .tlsv13)
        #expect(named.applicationProtocols == ["mcrp/1"])
        #expect(named.certificateVerification == .fullVerification)
        #expect(named.trustRoots == .certificates([try NIOSSLCertificateFromPEM(pki.ca.certificatePEM)]))
        #expect(named.certificateChain.count == 1)

        let unnamed = try pki.clientConfiguration(identity: .none)
        #expect(unnamed.certificateVerification == .noHostnameVerification)
        #expect(unnamed.certificateChain.isEmpty)
        #expect(unnamed.privateKey == nil)

        #expect(TLSConfigurations.handlerHostname(for: "rec.example") == "rec.example")
        #expect(TLSConfigurations.handlerHostname(for: "127.0.0.1") == nil)
        #expect(TLSConfigurations.handlerHostname(for: "::1") == nil)
        #expect(TLSConfigurations.handlerHostname(for: nil) == nil)
    }

    @Test("Missing files are named with their role")
    func missingFiles() throws {
        let temporary = try TemporaryDirectory(prefix: "recording-tls-tests")
        defer { temporary.remove() }
        let pki = try TestPKI()
        let cert = try temporary.write(pki.server.certificatePEM, to: "cert.pem")
        let key = try temporary.write(pki.server.privateKeyPEM, to: "key.pem")
        let ca = try temporary.write(pki.ca.certificatePEM, to: "ca.pem")
        let absent = temporary.file("absent.pem")

        #expect(throws: TLSSetupError.missingFile(path: absent, role: "certificate")) {
            try TLSConfigurations.server(certificatePEMPath: absent, privateKeyPEMPath: key, caPEMPath: ca)
        }
        #expect(throws: TLSSetupError.missingFile(path: absent, role: "private key")) {
            try TLSConfigurations.server(certificatePEMPath: cert, privateKeyPEMPath: absent, caPEMPath: ca)
        }
        #expect(throws: TLSSetupError.missingFile(path: absent, role: "CA certificate")) {
            try TLSConfigurations.client(
                caPEMPath: absent, certificatePEMPath: nil, privateKeyPEMPath: nil, serverHostname: nil)
        }
        // Sanity: the same files without the mistakes work.
        _ = try TLSConfigurations.server(certificatePEMPath: cert, privateKeyPEMPath: key, caPEMPath: ca)
    }

    @Test("A server or agent certificate given as the CA is refused, naming the file")
    func leafAsCertificateAuthority() throws {
        let temporary = try TemporaryDirectory(prefix: "recording-tls-tests")
        defer { temporary.remove() }
        let pki = try TestPKI()
        let cert = try temporary.write(pki.server.certificatePEM, to: "cert.pem")
        let key = try temporary.write(pki.server.privateKeyPEM, to: "key.pem")
        let leafAsCA = try temporary.write(pki.server.certificatePEM, to: "not-a-ca.pem")
        do {
            _ = try TLSConfigurations.server(certificatePEMPath: cert, privateKeyPEMPath: key, caPEMPath: leafAsCA)
            Issue.record("a leaf certificate was accepted as the CA")
        } catch {
            guard case .notACertificateAuthority(let source, _) = error else { Issue.record("wrong error \(error)"); return }
            #expect(source == leafAsCA)
            #expect(error.description.contains("not a CA certificate") && error.description.contains("recordctl ca init"))
        }
        #expect(throws: (any Error).self) {
            try TLSConfigurations.client(caPEMPath: leafAsCA, certificatePEMPath: nil, privateKeyPEMPath: nil, serverHostname: nil)
        }
    }

    @Test("A directory where a file is expected is unreadable")
    func directoryIsUnreadable() throws {
        let temporary = try TemporaryDirectory(prefix: "recording-tls-tests")
        defer { temporary.remove() }
        let error = #expect(throws: TLSSetupError.self) {
            try TLSConfigurations.client(
                caPEMPath: temporary.path, certificatePEMPath: nil, privateKeyPEMPath: nil, serverHostname: nil)
        }
        guard case .unreadableFile(let path, let role, _) = error else {
            Issue.record("unexpected error \(String(describing: error))")
            return
        }
        #expect(path == temporary.path)
        #expect(role == "CA certificate")
    }

    @Test("Files that are not PEM of the right kind are reported")
    func notPEM() throws {
        let temporary = try TemporaryDirectory(prefix: "recording-tls-tests")
        defer { temporary.remove() }
        let pki = try TestPKI()
        let cert = try temporary.write(pki.server.certificatePEM, to: "cert.pem")
        let key = try temporary.write(pki.server.privateKeyPEM, to: "key.pem")
        let ca = try temporary.write(pki.ca.certificatePEM, to: "ca.pem")
        let text = try temporary.write("hello, world\n", to: "text.pem")
        let damaged = try temporary.write(
            "-----BEGIN CERTIFICATE-----\nAAAA!!!!\n-----END CERTIFICATE-----\n", to: "damaged.pem")

        func expectNotPEM(_ path: String, role: String, _ body: () throws -> Void) {
            let error = #expect(throws: TLSSetupError.self, performing: body)
            guard case .notPEM(let source, let reportedRole, _) = error else {
                Issue.record("expected notPEM for \(path), got \(String(describing: error))")
                return
            }
            #expect(source == path)
            #expect(reportedRole == role)
        }
        expectNotPEM(text, role: "certificate") {
            _ = try TLSConfigurations.server(certificatePEMPath: text, privateKeyPEMPath: key, caPEMPath: ca)
        }
        expectNotPEM(damaged, role: "CA certificate") {
            _ = try TLSConfigurations.server(certificatePEMPath: cert, privateKeyPEMPath: key, caPEMPath: damaged)
        }
        // A certificate where the key should be.
        expectNotPEM(cert, role: "private key") {
            _ = try TLSConfigurations.server(certificatePEMPath: cert, privateKeyPEMPath: cert, caPEMPath: ca)
        }
        // A key where the CA certificate should be.
        expectNotPEM(key, role: "CA certificate") {
            _ = try TLSConfigurations.client(
                caPEMPath: key, certificatePEMPath: nil, privateKeyPEMPath: nil, serverHostname: nil)
        }
    }

    @Test("A key that does not match the certificate names both files")
    func keyMismatch() throws {
        let temporary = try TemporaryDirectory(prefix: "recording-tls-tests")
        defer { temporary.remove() }
        let pki = try TestPKI()
        let cert = try temporary.write(pki.agent.certificatePEM, to: "agent.pem")
        let wrongKey = try temporary.write(pki.server.privateKeyPEM, to: "server-key.pem")
        let ca = try temporary.write(pki.ca.certificatePEM, to: "ca.pem")
        #expect(throws: TLSSetupError.keyDoesNotMatchCertificate(certificate: cert, key: wrongKey)) {
            try TLSConfigurations.client(
                caPEMPath: ca, certificatePEMPath: cert, privateKeyPEMPath: wrongKey, serverHostname: "localhost")
        }
        #expect(
            throws: TLSSetupError.keyDoesNotMatchCertificate(certificate: "certificatePEM", key: "privateKeyPEM")
        ) {
            try TLSConfigurations.server(
                certificatePEM: pki.server.certificatePEM, privateKeyPEM: pki.agent.privateKeyPEM,
                caPEM: pki.ca.certificatePEM)
        }
    }

    @Test("Client certificate and key must come together; hostnames are validated")
    func clientArgumentErrors() throws {
        let pki = try TestPKI()
        #expect(throws: TLSSetupError.incompleteClientIdentity(missing: "private key")) {
            try TLSConfigurations.client(
                caPEM: pki.ca.certificatePEM, certificatePEM: pki.agent.certificatePEM, privateKeyPEM: nil,
                serverHostname: nil)
        }
        #expect(throws: TLSSetupError.incompleteClientIdentity(missing: "certificate")) {
            try TLSConfigurations.client(
                caPEM: pki.ca.certificatePEM, certificatePEM: nil, privateKeyPEM: pki.agent.privateKeyPEM,
                serverHostname: nil)
        }
        #expect(throws: TLSSetupError.invalidServerHostname("not a host")) {
            try TLSConfigurations.client(
                caPEM: pki.ca.certificatePEM, certificatePEM: nil, privateKeyPEM: nil, serverHostname: "not a host")
        }
    }

    @Test("Error messages name the file and the problem")
    func errorDescriptions() {
        #expect(
            TLSSetupError.missingFile(path: "/etc/mcrp/ca.pem", role: "CA certificate").description
                == "CA certificate file /etc/mcrp/ca.pem does not exist")
        #expect(
            TLSSetupError.keyDoesNotMatchCertificate(certificate: "a.pem", key: "k.pem").description
                == "private key k.pem does not match certificate a.pem")
    }
}

import Foundation
import RecordingTLS
import Testing
import TestSupport
import X509

@Suite("Certificate authority")
struct CertificateAuthorityTests {
    @Test("A new CA is a self-signed CA certificate with keyCertSign/cRLSign and a SKI")
    func createCA() throws {
        let now = Date()
        let ca = try CertificateAuthority.create(commonName: "Studio CA", now: now)
        let certificate = try parse(ca.certificatePEM)
        #expect(certificate.subject == certificate.issuer)
        #expect(certificate.subject.description.contains("Studio CA"))
        #expect(try certificate.extensions.basicConstraints == .isCertificateAuthority(maxPathLength: 0))
        let keyUsage = try #require(try certificate.extensions.keyUsage)
        #expect(keyUsage.keyCertSign && keyUsage.cRLSign)
        #expect(try certificate.extensions.subjectKeyIdentifier != nil)
        #expect(certificate.publicKey.isValidSignature(certificate.signature, for: certificate))
        // Default validity: ten years.
        #expect(abs(certificate.notValidAfter.timeIntervalSince(now) - 10 * CertificateAuthority.year) < 2)
        #expect(ca.privateKeyPEM.contains("BEGIN PRIVATE KEY"))
    }

    @Test("Server certificate: SAN DNS + IP, EKU serverAuth, AKI = CA SKI, signed by the CA")
    func serverCertificate() throws {
        let ca = try CertificateAuthority.create()
        let issued = try ca.issueServerCertificate(hostnames: ["localhost", "rec.example"], ipAddresses: ["127.0.0.1", "::1"])
        let certificate = try parse(issued.certificatePEM)
        let caCertificate = try parse(ca.certificatePEM)

        let names = Array(try #require(try certificate.extensions.subjectAlternativeNames))
        #expect(names.contains(.dnsName("localhost")))
        #expect(names.contains(.dnsName("rec.example")))
        let ipCount = names.filter { if case .ipAddress = $0 { true } else { false } }.count
        #expect(ipCount == 2)
        #expect(try certificate.extensions.extendedKeyUsage?.contains(.serverAuth) == true)
        #expect(try certificate.extensions.extendedKeyUsage?.contains(.clientAuth) == false)
        #expect(try certificate.extensions.basicConstraints == .notCertificateAuthority)
        #expect(
            try certificate.extensions.authorityKeyIdentifier?.keyIdentifier
                == caCertificate.extensions.subjectKeyIdentifier?.keyIdentifier
        )
        #expect(certificate.issuer == caCertificate.subject)
        #expect(caCertificate.publicKey.isValidSignature(certificate.signature, for: certificate))
        #expect(issued.serialNumber.count == 32)
        #expect(issued.privateKeyPEM.contains("BEGIN PRIVATE KEY"))
    }

    @Test("Agent certificate: CN and SAN URI carry the id, EKU clientAuth")
    func agentCertificate() throws {
        let ca = try CertificateAuthority.create()
        let now = Date()
        let issued = try ca.issueAgentCertificate(agentID: "mic_2", now: now)
        let certificate = try parse(issued.certificatePEM)
        #expect(certificate.subject.description == "CN=mic_2")
        let names = Array(try #require(try certificate.extensions.subjectAlternativeNames))
        #expect(names == [.uniformResourceIdentifier("urn:mcrp:agent:mic_2")])
        #expect(try certificate.extensions.extendedKeyUsage?.contains(.clientAuth) == true)
        #expect(try certificate.extensions.extendedKeyUsage?.contains(.serverAuth) == false)
        #expect(issued.notAfter == certificate.notValidAfter)
        #expect(abs(issued.notAfter.timeIntervalSince(now) - CertificateAuthority.year) < 2)
        #expect(try PeerIdentity.agentID(from: certificate) == "mic_2")
    }

    @Test("Serial numbers are random and printed as lowercase hex")
    func serialNumbers() throws {
        let ca = try CertificateAuthority.create()
        let serials = try (0..<20).map { _ in try ca.issueAgentCertificate(agentID: "a").serialNumber }
        #expect(Set(serials).count == serials.count)
        for serial in serials {
            #expect(serial.count == 32)
            #expect(serial.allSatisfy { "0123456789abcdef".contains($0) })
        }
    }

    @Test("An already expired agent certificate can be issued (for tests)")
    func expiredIssuance() throws {
        let ca = try CertificateAuthority.create()
        let start = Date().addingTimeInterval(-10 * 24 * 3600)
        let issued = try ca.issueAgentCertificate(agentID: "old", validity: 3600, notBefore: start)
        let certificate = try parse(issued.certificatePEM)
        #expect(abs(certificate.notValidBefore.timeIntervalSince(start)) < 1)
        #expect(issued.notAfter < Date())
    }

    @Test("Empty or negative validity is rejected")
    func invalidValidity() throws {
        let ca = try CertificateAuthority.create()
        #expect(throws: CertificateAuthorityError.self) {
            try ca.issueAgentCertificate(agentID: "a", validity: -1, notBefore: Date())
        }
        #expect(throws: CertificateAuthorityError.self) {
            try CertificateAuthority.create(validity: -3600)
        }
    }

    @Test(
        "Invalid agent ids are refused with a specific error",
        arguments: [
            ("", AgentIdentifierError.empty),
            ("-cam", .mustStartWithLetterOrDigit("-cam")),
            (".hidden", .mustStartWithLetterOrDigit(".hidden")),
            ("cam 1", .invalidCharacter("cam 1", character: " ")),
            ("cam/1", .invalidCharacter("cam/1", character: "/")),
            ("kamera-ü", .invalidCharacter("kamera-ü", character: "ü")),
            (String(repeating: "a", count: 65), .tooLong(String(repeating: "a", count: 65), length: 65)),
        ]
    )
    func invalidAgentID(id: String, expected: AgentIdentifierError) throws {
        let ca = try CertificateAuthority.create()
        #expect(throws: CertificateAuthorityError.invalidAgentID(expected)) {
            try ca.issueAgentCertificate(agentID: id)
        }
        #expect(!AgentIdentifier.isValid(id))
        #expect(!CertificateAuthorityError.invalidAgentID(expected).description.isEmpty)
    }

    @Test("Valid agent ids", arguments: ["a", "7", "cam-1", "Front.Cam_02", String(repeating: "z", count: 64)])
    func validAgentID(id: String) throws {
        #expect(AgentIdentifier.isValid(id))
        let ca = try CertificateAuthority.create()
        let issued = try ca.issueAgentCertificate(agentID: id)
        #expect(try PeerIdentity.agentID(from: parse(issued.certificatePEM)) == id)
    }

    @Test("Server names are validated")
    func serverNameValidation() throws {
        let ca = try CertificateAuthority.create()
        #expect(throws: CertificateAuthorityError.noServerNames) {
            try ca.issueServerCertificate(hostnames: [])
        }
        #expect(throws: CertificateAuthorityError.invalidHostname("bad host")) {
            try ca.issueServerCertificate(hostnames: ["bad host"])
        }
        #expect(throws: CertificateAuthorityError.invalidHostname("-x.example")) {
            try ca.issueServerCertificate(hostnames: ["-x.example"])
        }
        #expect(throws: CertificateAuthorityError.invalidIPAddress("300.1.1.1")) {
            try ca.issueServerCertificate(hostnames: ["localhost"], ipAddresses: ["300.1.1.1"])
        }
        // IP-only server certificates are fine.
        _ = try ca.issueServerCertificate(hostnames: [], ipAddresses: ["10.0.0.5"])
    }

    @Test("write/load round trip with 0600 key, 0644 certificate, 0700 directory")
    func writeAndLoad() throws {
        let temporary = try TemporaryDirectory(prefix: "recording-tls-tests")
        defer { temporary.remove() }
        let directory = temporary.file("nested/ca")
        let ca = try CertificateAuthority.create()
        try ca.write(to: directory)

        #expect(try permissions(of: directory + "/ca-key.pem") == 0o600)
        // Certificates are public: 0644 (narrowed only by a stricter umask).
        #expect(try permissions(of: directory + "/ca.pem") & 0o7722 == 0o600)
        #expect(try permissions(of: directory) == 0o700)
        #expect(try permissions(of: temporary.file("nested")) == 0o700)

        let loaded = try CertificateAuthority.load(from: directory)
        #expect(loaded.certificatePEM == ca.certificatePEM)
        #expect(loaded.privateKeyPEM == ca.privateKeyPEM)
        // A loaded CA issues certificates that chain to the original.
        let issued = try loaded.issueAgentCertificate(agentID: "cam-9")
        let certificate = try parse(issued.certificatePEM)
        #expect(ca.certificate.publicKey.isValidSignature(certificate.signature, for: certificate))
    }

    @Test("IssuedCertificate.write: key 0600 even when replacing a world-readable file")
    func issuedWritePermissions() throws {
        let temporary = try TemporaryDirectory(prefix: "recording-tls-tests")
        defer { temporary.remove() }
        let ca = try CertificateAuthority.create()
        let issued = try ca.issueAgentCertificate(agentID: "cam-1")
        let keyPath = try temporary.write("old", to: "agent-key.pem")
        chmod(keyPath, 0o644)
        let certPath = temporary.file("certs/agent.pem")

        try issued.write(certPath: certPath, keyPath: keyPath)
        #expect(try permissions(of: keyPath) == 0o600)
        #expect(try permissions(of: certPath) & 0o7722 == 0o600)
        #expect(try String(contentsOfFile: keyPath, encoding: .utf8) == issued.privateKeyPEM)
        #expect(try String(contentsOfFile: certPath, encoding: .utf8) == issued.certificatePEM)
        // No temporary files are left behind.
        #expect(try FileManager.default.contentsOfDirectory(atPath: temporary.path).sorted() == ["agent-key.pem", "certs"])
    }

    @Test("Loading a CA reports which file is wrong")
    func loadErrors() throws {
        let temporary = try TemporaryDirectory(prefix: "recording-tls-tests")
        defer { temporary.remove() }
        #expect(throws: CertificateAuthorityError.file(.missing(path: temporary.file("ca.pem")))) {
            try CertificateAuthority.load(from: temporary.path)
        }

        let ca = try CertificateAuthority.create()
        let other = try CertificateAuthority.create()
        _ = try temporary.write(ca.certificatePEM, to: "ca.pem")
        _ = try temporary.write(other.privateKeyPEM, to: "ca-key.pem")
        #expect(
            throws: CertificateAuthorityError.keyDoesNotMatchCertificate(
                certificate: temporary.file("ca.pem"), key: temporary.file("ca-key.pem"))
        ) {
            try CertificateAuthority.load(from: temporary.path)
        }

        _ = try temporary.write("not a key", to: "ca-key.pem")
        let keyError = #expect(throws: CertificateAuthorityError.self) {
            try CertificateAuthority.load(from: temporary.path)
        }
        guard case .invalidPrivateKey(let source, _) = keyError else {
            Issue.record("unexpected error \(String(describing: keyError))")
            return
        }
        #expect(source == temporary.file("ca-key.pem"))
    }

    @Test("A leaf certificate cannot be loaded as a CA")
    func leafIsNotACA() throws {
        let ca = try CertificateAuthority.create()
        let server = try ca.issueServerCertificate(hostnames: ["localhost"])
        #expect(throws: CertificateAuthorityError.notACertificateAuthority(source: "CA certificate PEM")) {
            try CertificateAuthority(certificatePEM: server.certificatePEM, privateKeyPEM: server.privateKeyPEM)
        }
        let garbage = #expect(throws: CertificateAuthorityError.self) {
            try CertificateAuthority(certificatePEM: "garbage", privateKeyPEM: ca.privateKeyPEM)
        }
        guard case .invalidCertificate = garbage else {
            Issue.record("unexpected error \(String(describing: garbage))")
            return
        }
    }
}

import Crypto
import Foundation
import NIOSSL
import RecordingTLS
import X509

/// A complete in-memory deployment: CA, server certificate for localhost/127.0.0.1 and
/// one agent certificate.
struct TestPKI {
    let ca: CertificateAuthority
    let server: IssuedCertificate
    let agent: IssuedCertificate
    let agentID: String

    init(agentID: String = "cam-1", caName: String = "Test CA") throws {
        self.agentID = agentID
        ca = try CertificateAuthority.create(commonName: caName)
        server = try ca.issueServerCertificate(hostnames: ["localhost"], ipAddresses: ["127.0.0.1", "::1"])
        agent = try ca.issueAgentCertificate(agentID: agentID)
    }

    /// Server configuration presenting `certificate` (default: this PKI's server certificate).
    func serverConfiguration(
        presenting certificate: IssuedCertificate? = nil,
        requireClientCertificate: Bool = true
    ) throws -> TLSConfiguration {
        let presented = certificate ?? server
        return try TLSConfigurations.server(
            certificatePEM: presented.certificatePEM,
            privateKeyPEM: presented.privateKeyPEM,
            caPEM: ca.certificatePEM,
            requireClientCertificate: requireClientCertificate
        )
    }

    /// Which certificate the test client presents.
    enum ClientIdentity {
        /// This PKI's agent certificate.
        case agent
        /// No client certificate at all.
        case none
        /// Some other certificate (expired, foreign CA, …).
        case custom(IssuedCertificate)
    }

    func clientConfiguration(
        identity: ClientIdentity = .agent,
        serverHostname: String? = nil
    ) throws -> TLSConfiguration {
        let presented: IssuedCertificate? = switch identity {
        case .agent: agent
        case .none: nil
        case .custom(let certificate): certificate
        }
        return try TLSConfigurations.client(
            caPEM: ca.certificatePEM,
            certificatePEM: presented?.certificatePEM,
            privateKeyPEM: presented?.privateKeyPEM,
            serverHostname: serverHostname
        )
    }
}

/// POSIX permission bits of a file (without the type bits).
func permissions(of path: String) throws -> Int {
    let attributes = try FileManager.default.attributesOfItem(atPath: path)
    return (attributes[.posixPermissions] as! NSNumber).intValue & 0o7777
}

/// Parses a PEM certificate with swift-certificates (for inspecting extensions).
func parse(_ pem: String) throws -> Certificate {
    try Certificate(pemEncoded: pem)
}

/// Signs an arbitrary leaf with the CA's key, for identities our issuer would never
/// produce (CN/SAN combinations, missing names).
func customLeaf(
    ca: CertificateAuthority,
    subject: DistinguishedName,
    sanURIs: [String] = [],
    now: Date = Date()
) throws -> (certificate: NIOSSLCertificate, parsed: Certificate) {
    let caKey = try Certificate.PrivateKey(pemEncoded: ca.privateKeyPEM)
    let leafKey = Certificate.PrivateKey(P256.Signing.PrivateKey())
    var extensions = try Certificate.Extensions {
        Critical(BasicConstraints.notCertificateAuthority)
        try ExtendedKeyUsage([.clientAuth])
    }
    if !sanURIs.isEmpty {
        try extensions.append(
            SubjectAlternativeNames(sanURIs.map { .uniformResourceIdentifier($0) }).makeCertificateExtension()
        )
    }
    let leaf = try Certificate(
        version: .v3,
        serialNumber: Certificate.SerialNumber(),
        publicKey: leafKey.publicKey,
        notValidBefore: now - 60,
        notValidAfter: now + 3600,
        issuer: ca.certificate.subject,
        subject: subject,
        signatureAlgorithm: .ecdsaWithSHA256,
        extensions: extensions,
        issuerPrivateKey: caKey
    )
    let pem = try leaf.serializeAsPEM().pemString
    return (try NIOSSLCertificate(bytes: Array(pem.utf8), format: .pem), leaf)
}

/// The first certificate of a PEM string as NIOSSL sees it (what a server gets from the
/// handshake).
func NIOSSLCertificateFromPEM(_ pem: String) throws -> NIOSSLCertificate {
    try NIOSSLCertificate(bytes: Array(pem.utf8), format: .pem)
}

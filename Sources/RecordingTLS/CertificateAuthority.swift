import Crypto
import Foundation
import SwiftASN1
import X509

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Errors from creating, loading or using a `CertificateAuthority`.
public enum CertificateAuthorityError: Error, Equatable, CustomStringConvertible {
    /// The certificate PEM could not be parsed (`source` names the file or "certificate PEM").
    case invalidCertificate(source: String, reason: String)
    /// The private key PEM could not be parsed.
    case invalidPrivateKey(source: String, reason: String)
    /// The certificate is not a CA certificate (no basicConstraints CA:true).
    case notACertificateAuthority(source: String)
    /// The private key does not belong to the CA certificate.
    case keyDoesNotMatchCertificate(certificate: String, key: String)
    /// A hostname for a server certificate is not a valid DNS name.
    case invalidHostname(String)
    /// An IP address for a server certificate is neither IPv4 nor IPv6.
    case invalidIPAddress(String)
    /// A server certificate needs at least one hostname or IP address.
    case noServerNames
    /// The requested validity period is empty or negative.
    case invalidValidity(notBefore: Date, notAfter: Date)
    /// An agent id failed validation.
    case invalidAgentID(AgentIdentifierError)
    /// Reading or writing a file failed.
    case file(FileAccessError)
    /// swift-certificates refused to build or sign the certificate.
    case signingFailed(reason: String)

    public var description: String {
        switch self {
        case .invalidCertificate(let source, let reason):
            return "\(source): not a valid PEM certificate (\(reason))"
        case .invalidPrivateKey(let source, let reason):
            return "\(source): not a valid PEM private key (\(reason))"
        case .notACertificateAuthority(let source):
            return "\(source): certificate is not a CA certificate (basicConstraints CA:true missing)"
        case .keyDoesNotMatchCertificate(let certificate, let key):
            return "\(key): private key does not match the certificate in \(certificate)"
        case .invalidHostname(let name):
            return "invalid hostname \"\(name)\" for a server certificate"
        case .invalidIPAddress(let address):
            return "invalid IP address \"\(address)\" for a server certificate"
        case .noServerNames:
            return "a server certificate needs at least one hostname or IP address"
        case .invalidValidity(let notBefore, let notAfter):
            return "invalid validity: notAfter \(notAfter) is not after notBefore \(notBefore)"
        case .invalidAgentID(let error):
            return error.description
        case .file(let error):
            return error.description
        case .signingFailed(let reason):
            return "cannot create certificate: \(reason)"
        }
    }
}

/// A certificate and its private key as issued by `CertificateAuthority`.
public struct IssuedCertificate: Sendable {
    /// The certificate, PEM ("CERTIFICATE").
    public var certificatePEM: String
    /// The private key, PKCS#8 PEM ("PRIVATE KEY").
    public var privateKeyPEM: String
    /// Serial number as lowercase hex without separators; the form `RevocationList` and
    /// `PeerIdentity.serialNumber(of:)` use.
    public var serialNumber: String
    /// End of the validity period.
    public var notAfter: Date

    public init(certificatePEM: String, privateKeyPEM: String, serialNumber: String, notAfter: Date) {
        self.certificatePEM = certificatePEM
        self.privateKeyPEM = privateKeyPEM
        self.serialNumber = serialNumber
        self.notAfter = notAfter
    }

    /// Writes the certificate (mode 0644) and the key (mode 0600, never wider at any moment).
    /// Missing parent directories are created with mode 0700.
    public func write(certPath: String, keyPath: String) throws(CertificateAuthorityError) {
        do {
            try SecureFiles.makeDirectory(parentDirectory(of: certPath))
            try SecureFiles.makeDirectory(parentDirectory(of: keyPath))
            try SecureFiles.write(Array(certificatePEM.utf8), to: certPath, mode: SecureFiles.publicFileMode)
            try SecureFiles.write(Array(privateKeyPEM.utf8), to: keyPath, mode: SecureFiles.privateKeyMode)
        } catch {
            throw .file(error)
        }
    }
}

/// A small certificate authority for one deployment: it signs the server certificate and
/// one client certificate per agent. Keys are ECDSA P-256 (small, fast, supported by every
/// TLS 1.3 stack); certificates are X.509 v3 built with swift-certificates.
///
/// There are no intermediates: the deployment is small and the server is the only party
/// that verifies agent certificates, so a single self-signed root with `pathLen 0` is
/// enough and keeps the trust store (`ca.pem`) a single file.
public struct CertificateAuthority: Sendable {
    /// File name of the CA certificate inside a CA directory.
    public static let certificateFileName = "ca.pem"
    /// File name of the CA private key inside a CA directory.
    public static let privateKeyFileName = "ca-key.pem"

    /// Clock-skew allowance: certificates issued "now" are valid from a few minutes ago, so
    /// that a peer whose clock runs slightly behind does not reject a fresh certificate.
    static let backdating: TimeInterval = 5 * 60

    /// Seconds in a (non-leap) year, for the default validities.
    public static let year: TimeInterval = 365 * 24 * 60 * 60

    /// The CA certificate.
    public let certificate: Certificate
    private let privateKey: Certificate.PrivateKey

    private init(certificate: Certificate, privateKey: Certificate.PrivateKey) {
        self.certificate = certificate
        self.privateKey = privateKey
    }

    // MARK: Creating and loading

    /// Creates a new self-signed CA with a fresh P-256 key.
    public static func create(
        commonName: String = "Recording CA",
        validity: TimeInterval = 10 * year,
        now: Date = Date()
    ) throws(CertificateAuthorityError) -> CertificateAuthority {
        let key = P256.Signing.PrivateKey()
        let privateKey = Certificate.PrivateKey(key)
        let notBefore = now - backdating
        let notAfter = now + validity
        guard notAfter > notBefore else { throw .invalidValidity(notBefore: notBefore, notAfter: notAfter) }

        let certificate: Certificate
        do {
            let name = try DistinguishedName { CommonName(commonName) }
            let extensions = try Certificate.Extensions {
                // pathLen 0: this CA signs leaf certificates only.
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: privateKey.publicKey)
            }
            certificate = try Certificate(
                version: .v3,
                serialNumber: makeSerialNumber(),
                publicKey: privateKey.publicKey,
                notValidBefore: notBefore,
                notValidAfter: notAfter,
                issuer: name,
                subject: name,
                signatureAlgorithm: .ecdsaWithSHA256,
                extensions: extensions,
                issuerPrivateKey: privateKey
            )
        } catch {
            throw .signingFailed(reason: String(describing: error))
        }
        return CertificateAuthority(certificate: certificate, privateKey: privateKey)
    }

    /// Loads a CA from PEM strings, checking that the certificate is a CA certificate and
    /// that the key belongs to it (a mismatched pair would sign certificates nobody can
    /// verify, which is far harder to diagnose later).
    public init(certificatePEM: String, privateKeyPEM: String) throws(CertificateAuthorityError) {
        try self.init(
            certificatePEM: certificatePEM, certificateSource: "CA certificate PEM",
            privateKeyPEM: privateKeyPEM, keySource: "CA private key PEM"
        )
    }

    private init(
        certificatePEM: String, certificateSource: String,
        privateKeyPEM: String, keySource: String
    ) throws(CertificateAuthorityError) {
        let certificate: Certificate
        do {
            certificate = try Certificate(pemEncoded: certificatePEM)
        } catch {
            throw .invalidCertificate(source: certificateSource, reason: String(describing: error))
        }
        let privateKey: Certificate.PrivateKey
        do {
            privateKey = try Certificate.PrivateKey(pemEncoded: privateKeyPEM)
        } catch {
            throw .invalidPrivateKey(source: keySource, reason: String(describing: error))
        }
        guard case .isCertificateAuthority = try? certificate.extensions.basicConstraints else {
            throw .notACertificateAuthority(source: certificateSource)
        }
        guard privateKey.publicKey == certificate.publicKey else {
            throw .keyDoesNotMatchCertificate(certificate: certificateSource, key: keySource)
        }
        self.init(certificate: certificate, privateKey: privateKey)
    }

    /// The CA certificate as PEM; this is the trust root both ends configure.
    public var certificatePEM: String {
        // Serialising a certificate we parsed or built ourselves cannot fail in practice;
        // a crash here would mean swift-certificates lost the ability to re-encode it.
        try! certificate.serializeAsPEM().pemString
    }

    /// The CA private key as PEM (PKCS#8 for the keys this type creates).
    public var privateKeyPEM: String {
        try! privateKey.serializeAsPEM().pemString
    }

    /// Writes `ca.pem` (0644) and `ca-key.pem` (0600) into `directory`, creating it with
    /// mode 0700 if needed.
    public func write(to directory: String) throws(CertificateAuthorityError) {
        do {
            try SecureFiles.makeDirectory(directory)
            try SecureFiles.write(
                Array(certificatePEM.utf8),
                to: SecureFiles.join(directory, Self.certificateFileName),
                mode: SecureFiles.publicFileMode
            )
            try SecureFiles.write(
                Array(privateKeyPEM.utf8),
                to: SecureFiles.join(directory, Self.privateKeyFileName),
                mode: SecureFiles.privateKeyMode
            )
        } catch {
            throw .file(error)
        }
    }

    /// Loads `ca.pem` and `ca-key.pem` from `directory`; errors name the offending file.
    public static func load(from directory: String) throws(CertificateAuthorityError) -> CertificateAuthority {
        let certificatePath = SecureFiles.join(directory, certificateFileName)
        let keyPath = SecureFiles.join(directory, privateKeyFileName)
        let certificateBytes: [UInt8]
        let keyBytes: [UInt8]
        do {
            certificateBytes = try SecureFiles.read(path: certificatePath)
            keyBytes = try SecureFiles.read(path: keyPath)
        } catch {
            throw .file(error)
        }
        return try CertificateAuthority(
            certificatePEM: String(decoding: certificateBytes, as: UTF8.self), certificateSource: certificatePath,
            privateKeyPEM: String(decoding: keyBytes, as: UTF8.self), keySource: keyPath
        )
    }

    // MARK: Issuing

    /// Issues the server's certificate: SAN DNS names and IP addresses, EKU serverAuth.
    ///
    /// The subject CN repeats the first name for humans reading the certificate; clients
    /// only look at the SAN (RFC 6125), which is why every name goes there.
    public func issueServerCertificate(
        hostnames: [String],
        ipAddresses: [String] = [],
        validity: TimeInterval = 2 * year,
        now: Date = Date()
    ) throws(CertificateAuthorityError) -> IssuedCertificate {
        guard !hostnames.isEmpty || !ipAddresses.isEmpty else { throw .noServerNames }
        var names: [GeneralName] = []
        for hostname in hostnames {
            guard Self.isValidDNSName(hostname) else { throw .invalidHostname(hostname) }
            names.append(.dnsName(hostname))
        }
        for address in ipAddresses {
            guard let bytes = Self.parseIPAddress(address) else { throw .invalidIPAddress(address) }
            names.append(.ipAddress(ASN1OctetString(contentBytes: bytes[...])))
        }
        let subjectAlternativeNames = SubjectAlternativeNames(names)
        return try issue(
            commonName: hostnames.first ?? ipAddresses[0],
            notBefore: nil,
            validity: validity,
            now: now
        ) {
            Critical(BasicConstraints.notCertificateAuthority)
            // ECDSA keys in TLS 1.3 only ever sign the handshake.
            Critical(KeyUsage(digitalSignature: true))
            try ExtendedKeyUsage([.serverAuth])
            subjectAlternativeNames
        }
    }

    /// Issues an agent's client certificate: CN = `agentID`, SAN URI
    /// `urn:mcrp:agent:<agentID>`, EKU clientAuth.
    ///
    /// - Parameters:
    ///   - notBefore: start of validity; `nil` means a few minutes before `now`. Passing a
    ///     date in the past together with a short `validity` yields an already expired
    ///     certificate, which tests use to check that expiry is enforced.
    ///   - validity: length of the validity period, counted from `notBefore` when given,
    ///     else from `now`.
    public func issueAgentCertificate(
        agentID: String,
        validity: TimeInterval = year,
        notBefore: Date? = nil,
        now: Date = Date()
    ) throws(CertificateAuthorityError) -> IssuedCertificate {
        do {
            try AgentIdentifier.validate(agentID)
        } catch {
            throw .invalidAgentID(error)
        }
        let subjectAlternativeNames = SubjectAlternativeNames([
            .uniformResourceIdentifier(MCRPTransport.agentURIPrefix + agentID)
        ])
        return try issue(commonName: agentID, notBefore: notBefore, validity: validity, now: now) {
            Critical(BasicConstraints.notCertificateAuthority)
            Critical(KeyUsage(digitalSignature: true))
            try ExtendedKeyUsage([.clientAuth])
            subjectAlternativeNames
        }
    }

    /// Common part of issuing a leaf: fresh key, random serial, issuer = our subject,
    /// SKI/AKI so that chain building never has to guess by name alone.
    private func issue(
        commonName: String,
        notBefore explicitNotBefore: Date?,
        validity: TimeInterval,
        now: Date,
        @ExtensionsBuilder extensions leafExtensions: () throws -> Result<Certificate.Extensions, any Error>
    ) throws(CertificateAuthorityError) -> IssuedCertificate {
        let notBefore = explicitNotBefore ?? (now - Self.backdating)
        let notAfter = (explicitNotBefore ?? now) + validity
        guard notAfter > notBefore else { throw .invalidValidity(notBefore: notBefore, notAfter: notAfter) }

        let key = P256.Signing.PrivateKey()
        let leafKey = Certificate.PrivateKey(key)
        let serialNumber = Self.makeSerialNumber()
        do {
            var extensions = try leafExtensions().get()
            try extensions.append(
                AuthorityKeyIdentifier(keyIdentifier: authorityKeyIdentifier).makeCertificateExtension()
            )
            try extensions.append(SubjectKeyIdentifier(hash: leafKey.publicKey).makeCertificateExtension())

            let certificate = try Certificate(
                version: .v3,
                serialNumber: serialNumber,
                publicKey: leafKey.publicKey,
                notValidBefore: notBefore,
                notValidAfter: notAfter,
                issuer: self.certificate.subject,
                subject: try DistinguishedName { CommonName(commonName) },
                signatureAlgorithm: .ecdsaWithSHA256,
                extensions: extensions,
                issuerPrivateKey: privateKey
            )
            return IssuedCertificate(
                certificatePEM: try certificate.serializeAsPEM().pemString,
                privateKeyPEM: key.pemRepresentation,
                serialNumber: SerialNumberFormat.hex(serialNumber.bytes),
                // The encoded time has whole seconds; report what the certificate says.
                notAfter: certificate.notValidAfter
            )
        } catch {
            throw .signingFailed(reason: String(describing: error))
        }
    }

    /// The CA's key identifier: its SKI extension when present (ours always is), else the
    /// RFC 5280 SHA-1 hash of its public key, which is what the SKI would have been.
    private var authorityKeyIdentifier: ArraySlice<UInt8> {
        if let ski = try? certificate.extensions.subjectKeyIdentifier {
            return ski.keyIdentifier
        }
        return SubjectKeyIdentifier(hash: certificate.publicKey).keyIdentifier
    }

    /// A random positive 128-bit serial. The top bit is cleared (ASN.1 INTEGERs are signed,
    /// a set bit would need a 0x00 prefix) and the next one set, so every serial has exactly
    /// 16 bytes and always prints as 32 hex digits.
    static func makeSerialNumber() -> Certificate.SerialNumber {
        var generator = SystemRandomNumberGenerator()
        var bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        bytes[0] = (bytes[0] & 0x7F) | 0x40
        return Certificate.SerialNumber(bytes: bytes)
    }

    // MARK: Name validation

    /// A DNS name as it may appear in a SAN: labels of letters, digits and hyphens (not at
    /// either end), at most 63 bytes each, 253 in total; `*.` is allowed as the first label.
    static func isValidDNSName(_ name: String) -> Bool {
        var rest = Substring(name)
        if rest.hasPrefix("*.") { rest = rest.dropFirst(2) }
        guard !rest.isEmpty, name.utf8.count <= 253 else { return false }
        for label in rest.split(separator: ".", omittingEmptySubsequences: false) {
            guard (1...63).contains(label.utf8.count), label.first != "-", label.last != "-" else { return false }
            for scalar in label.unicodeScalars {
                let ok = ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar)
                    || ("0"..."9").contains(scalar) || scalar == "-"
                if !ok { return false }
            }
        }
        // An all-numeric name is an IPv4 address in disguise; it belongs in ipAddresses.
        return parseIPAddress(name) == nil
    }

    /// The network-order bytes of an IPv4 (4 bytes) or IPv6 (16 bytes) literal.
    static func parseIPAddress(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) }
        }
        return nil
    }
}

/// One textual form for serial numbers everywhere (issuance, peer inspection, revocation
/// list): lowercase hex, no separators, no leading zero bytes.
enum SerialNumberFormat {
    static func hex<Bytes: Collection>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        let significant = bytes.drop(while: { $0 == 0 })
        if significant.isEmpty { return "0" }
        return significant.map { byte in
            let digits = String(byte, radix: 16)
            return digits.count == 1 ? "0" + digits : digits
        }.joined()
    }

    /// Normalises user- or file-supplied serials ("0A:1b…", "00a1b…") to the form above.
    static func normalize(_ text: String) -> String {
        var digits = text.lowercased().filter { ("0"..."9").contains($0) || ("a"..."f").contains($0) }
        while digits.count > 1, digits.hasPrefix("0") { digits.removeFirst() }
        // Whole bytes, as `hex` prints them.
        if digits.count % 2 == 1, digits != "0" { digits = "0" + digits }
        return digits
    }
}

private func parentDirectory(of path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return "" }
    return slash == path.startIndex ? "/" : String(path[..<slash])
}

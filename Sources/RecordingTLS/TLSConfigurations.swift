import NIOSSL
import X509

/// Why a TLS configuration could not be built. Every case names the file (or, for the
/// PEM-string variants, the argument) and its role, so an operator can fix the right file.
public enum TLSSetupError: Error, Equatable, CustomStringConvertible {
    /// The file does not exist.
    case missingFile(path: String, role: String)
    /// The file exists but cannot be read (permissions, a directory, I/O error).
    case unreadableFile(path: String, role: String, reason: String)
    /// The content is not PEM of the expected kind (no certificate / no private key).
    case notPEM(source: String, role: String, reason: String)
    /// The private key does not belong to the (leaf) certificate.
    case keyDoesNotMatchCertificate(certificate: String, key: String)
    /// A client certificate was given without its key or vice versa.
    case incompleteClientIdentity(missing: String)
    /// The server hostname the client should verify is neither a DNS name nor an IP literal.
    case invalidServerHostname(String)
    /// The trust root given is an end-entity certificate, not a CA.
    case notACertificateAuthority(source: String, subject: String)

    public var description: String {
        switch self {
        case .missingFile(let path, let role):
            return "\(role) file \(path) does not exist"
        case .unreadableFile(let path, let role, let reason):
            return "\(role) file \(path) cannot be read: \(reason)"
        case .notPEM(let source, let role, let reason):
            return "\(source) is not a PEM \(role): \(reason)"
        case .keyDoesNotMatchCertificate(let certificate, let key):
            return "private key \(key) does not match certificate \(certificate)"
        case .incompleteClientIdentity(let missing):
            return "client certificate and private key must be given together: \(missing) is missing"
        case .invalidServerHostname(let name):
            return "invalid server hostname \"\(name)\": expected a DNS name or an IP address"
        case .notACertificateAuthority(let source, let subject):
            return "\(source) holds \(subject), which is not a CA certificate (no basicConstraints CA:true): a server or agent " +
                "certificate was given where the CA belongs. Give the CA that issued the certificates (ca.pem from `recordctl ca init`)"
        }
    }
}

/// NIOSSL configurations for both ends of an MCRP connection (protocol §2): TLS 1.3 only,
/// ALPN `mcrp/1`, and the deployment CA as the *only* trust root, so that a certificate
/// from a public CA (or any other deployment) is never accepted.
public enum TLSConfigurations {
    // MARK: Server

    /// Server configuration from PEM files.
    ///
    /// - Parameter requireClientCertificate: `true` (mutual TLS): a client without a
    ///   certificate fails the handshake. `false`: a client certificate is optional (for
    ///   bearer-token deployments, §2) but is still verified against the CA when presented.
    public static func server(
        certificatePEMPath: String,
        privateKeyPEMPath: String,
        caPEMPath: String,
        requireClientCertificate: Bool = true
    ) throws(TLSSetupError) -> TLSConfiguration {
        try server(
            certificate: PEMInput(path: certificatePEMPath, role: "certificate"),
            privateKey: PEMInput(path: privateKeyPEMPath, role: "private key"),
            ca: PEMInput(path: caPEMPath, role: "CA certificate"),
            requireClientCertificate: requireClientCertificate
        )
    }

    /// Server configuration from PEM strings (tests and callers that keep keys in memory).
    public static func server(
        certificatePEM: String,
        privateKeyPEM: String,
        caPEM: String,
        requireClientCertificate: Bool = true
    ) throws(TLSSetupError) -> TLSConfiguration {
        try server(
            certificate: PEMInput(text: certificatePEM, source: "certificatePEM", role: "certificate"),
            privateKey: PEMInput(text: privateKeyPEM, source: "privateKeyPEM", role: "private key"),
            ca: PEMInput(text: caPEM, source: "caPEM", role: "CA certificate"),
            requireClientCertificate: requireClientCertificate
        )
    }

    private static func server(
        certificate: PEMInput, privateKey: PEMInput, ca: PEMInput, requireClientCertificate: Bool
    ) throws(TLSSetupError) -> TLSConfiguration {
        let identity = try loadIdentity(certificate: certificate, privateKey: privateKey)
        let roots = try loadAuthorities(ca)

        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: identity.chain.map { .certificate($0) },
            privateKey: .privateKey(identity.key)
        )
        applyCommonSettings(to: &configuration, roots: roots)
        // `.noHostnameVerification` maps to SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT:
        // the chain must lead to our CA, and a missing certificate aborts the handshake.
        // Hostnames mean nothing for agents (they connect from anywhere); their identity is
        // read from the certificate afterwards (`PeerIdentity`).
        configuration.certificateVerification =
            requireClientCertificate ? .noHostnameVerification : .optionalVerification
        // Tells clients which CA we accept, so one holding several identities picks ours.
        configuration.sendCANameList = true
        return configuration
    }

    // MARK: Client

    /// Client (agent) configuration from PEM files.
    ///
    /// - Parameters:
    ///   - certificatePEMPath, privateKeyPEMPath: the agent's identity; both or neither
    ///     (neither for bearer-token deployments).
    ///   - serverHostname: the name (or IP literal) the agent connects to. When given, the
    ///     server certificate must carry it in its SAN; NIOSSL (following RFC 6125) also
    ///     accepts a certificate whose IP SAN equals the address actually connected to,
    ///     whatever name was asked for. When `nil`, any server certificate
    ///     issued by the deployment CA is accepted: the CA signs only our own servers and
    ///     agents, and BoringSSL refuses an agent certificate as a server certificate
    ///     because of its clientAuth-only extended key usage.
    ///
    /// Pass `TLSConfigurations.handlerHostname(for:)` of the same name to
    /// `NIOSSLClientHandler(context:serverHostname:)`.
    public static func client(
        caPEMPath: String,
        certificatePEMPath: String?,
        privateKeyPEMPath: String?,
        serverHostname: String?
    ) throws(TLSSetupError) -> TLSConfiguration {
        try client(
            ca: PEMInput(path: caPEMPath, role: "CA certificate"),
            certificate: certificatePEMPath.map { PEMInput(path: $0, role: "certificate") },
            privateKey: privateKeyPEMPath.map { PEMInput(path: $0, role: "private key") },
            serverHostname: serverHostname
        )
    }

    /// Client configuration from PEM strings.
    public static func client(
        caPEM: String,
        certificatePEM: String?,
        privateKeyPEM: String?,
        serverHostname: String?
    ) throws(TLSSetupError) -> TLSConfiguration {
        try client(
            ca: PEMInput(text: caPEM, source: "caPEM", role: "CA certificate"),
            certificate: certificatePEM.map { PEMInput(text: $0, source: "certificatePEM", role: "certificate") },
            privateKey: privateKeyPEM.map { PEMInput(text: $0, source: "privateKeyPEM", role: "private key") },
            serverHostname: serverHostname
        )
    }

    private static func client(
        ca: PEMInput, certificate: PEMInput?, privateKey: PEMInput?, serverHostname: String?
    ) throws(TLSSetupError) -> TLSConfiguration {
        if let serverHostname {
            guard CertificateAuthority.isValidDNSName(serverHostname)
                || CertificateAuthority.parseIPAddress(serverHostname) != nil
            else { throw .invalidServerHostname(serverHostname) }
        }
        let roots = try loadAuthorities(ca)

        var configuration = TLSConfiguration.makeClientConfiguration()
        switch (certificate, privateKey) {
        case (let certificate?, let privateKey?):
            let identity = try loadIdentity(certificate: certificate, privateKey: privateKey)
            configuration.certificateChain = identity.chain.map { .certificate($0) }
            configuration.privateKey = .privateKey(identity.key)
        case (nil, nil):
            break
        case (_?, nil):
            throw .incompleteClientIdentity(missing: "private key")
        case (nil, _?):
            throw .incompleteClientIdentity(missing: "certificate")
        }
        applyCommonSettings(to: &configuration, roots: roots)
        // With `.fullVerification` NIOSSL checks the SAN against the SNI name, or against the
        // peer's IP address when the handler got no name (IP literals cannot be SNI names).
        configuration.certificateVerification = serverHostname == nil ? .noHostnameVerification : .fullVerification
        return configuration
    }

    /// The `serverHostname` to give `NIOSSLClientHandler` for a host the client verifies:
    /// the name itself for DNS names, `nil` for IP literals, which TLS forbids as SNI and
    /// which NIOSSL then checks against the connected address instead.
    public static func handlerHostname(for serverHostname: String?) -> String? {
        guard let serverHostname, CertificateAuthority.parseIPAddress(serverHostname) == nil else { return nil }
        return serverHostname
    }

    // MARK: Shared

    private static func applyCommonSettings(to configuration: inout TLSConfiguration, roots: [NIOSSLCertificate]) {
        // Protocol §2: earlier versions MUST NOT be negotiated; pinning both ends makes a
        // TLS 1.2-only peer fail with protocol_version instead of silently downgrading.
        configuration.minimumTLSVersion = .tlsv13
        configuration.maximumTLSVersion = .tlsv13
        configuration.applicationProtocols = [MCRPTransport.alpnProtocol]
        // Replacing (not adding to) the default system store: only the deployment CA counts.
        configuration.trustRoots = .certificates(roots)
        configuration.additionalTrustRoots = []
    }

    /// Where PEM text comes from; `source` is what error messages call it.
    private struct PEMInput {
        var source: String
        var role: String
        var path: String?
        var text: String?

        init(path: String, role: String) {
            self.source = path
            self.role = role
            self.path = path
        }

        init(text: String, source: String, role: String) {
            self.source = source
            self.role = role
            self.text = text
        }

        func bytes() throws(TLSSetupError) -> [UInt8] {
            if let text { return Array(text.utf8) }
            do {
                return try SecureFiles.read(path: path!)
            } catch {
                switch error {
                case .missing(let path): throw .missingFile(path: path, role: role)
                case .isDirectory(let path): throw .unreadableFile(path: path, role: role, reason: "it is a directory")
                case .unreadable(let path, let reason), .unwritable(let path, let reason):
                    throw .unreadableFile(path: path, role: role, reason: reason)
                }
            }
        }
    }

    /// All certificates in a PEM input; at least one is required.
    private static func loadCertificates(_ input: PEMInput) throws(TLSSetupError) -> [NIOSSLCertificate] {
        let bytes = try input.bytes()
        // NIOSSL returns an empty array for text without any PEM block, and BoringSSL's
        // error stack for a damaged block says little; check the markers ourselves first.
        guard String(decoding: bytes, as: UTF8.self).contains("-----BEGIN CERTIFICATE-----") else {
            throw .notPEM(source: input.source, role: input.role, reason: "no \"BEGIN CERTIFICATE\" block found")
        }
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMBytes(bytes)
        } catch {
            throw .notPEM(source: input.source, role: input.role, reason: "damaged certificate block (\(error))")
        }
        guard !certificates.isEmpty else {
            throw .notPEM(source: input.source, role: input.role, reason: "no certificate found")
        }
        return certificates
    }

    /// The trust roots: certificates that are CAs. A leaf given as the CA would make every
    /// handshake fail with an unhelpful "unable to get local issuer certificate".
    private static func loadAuthorities(_ input: PEMInput) throws(TLSSetupError) -> [NIOSSLCertificate] {
        let certificates = try loadCertificates(input)
        for certificate in certificates {
            // NIOSSL parsed it already; a certificate swift-certificates cannot read is left to
            // BoringSSL's own checks rather than refused here.
            guard let der = try? certificate.toDERBytes(), let parsed = try? Certificate(derEncoded: der) else { continue }
            guard case .isCertificateAuthority = try? parsed.extensions.basicConstraints else {
                throw .notACertificateAuthority(source: input.source, subject: "\(parsed.subject)")
            }
        }
        return certificates
    }

    /// A certificate chain (leaf first) and the leaf's private key, checked to belong together.
    private static func loadIdentity(
        certificate: PEMInput, privateKey: PEMInput
    ) throws(TLSSetupError) -> (chain: [NIOSSLCertificate], key: NIOSSLPrivateKey) {
        let chain = try loadCertificates(certificate)
        let keyBytes = try privateKey.bytes()
        let keyText = String(decoding: keyBytes, as: UTF8.self)
        guard keyText.contains("-----BEGIN"), keyText.contains("PRIVATE KEY-----") else {
            throw .notPEM(source: privateKey.source, role: privateKey.role, reason: "no \"BEGIN … PRIVATE KEY\" block found")
        }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(bytes: keyBytes, format: .pem)
        } catch {
            throw .notPEM(source: privateKey.source, role: privateKey.role, reason: "damaged or encrypted key (\(error))")
        }

        // Compare public keys with swift-certificates so the error names both files; left to
        // BoringSSL the mismatch would surface later as an opaque KEY_VALUES_MISMATCH when
        // the NIOSSLContext is created. Key types swift-certificates cannot parse skip this
        // check and still get BoringSSL's.
        if let leafDER = try? chain[0].toDERBytes(),
            let leaf = try? Certificate(derEncoded: leafDER),
            let parsedKey = try? Certificate.PrivateKey(pemEncoded: keyText),
            parsedKey.publicKey != leaf.publicKey
        {
            throw .keyDoesNotMatchCertificate(certificate: certificate.source, key: privateKey.source)
        }
        return (chain, key)
    }
}

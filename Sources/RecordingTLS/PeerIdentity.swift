import Foundation
import NIOSSL
import X509

/// Why no agent id could be derived from a client certificate.
public enum PeerIdentityError: Error, Equatable, CustomStringConvertible {
    /// The certificate's DER could not be parsed by swift-certificates.
    case unparsableCertificate(reason: String)
    /// Neither a `urn:mcrp:agent:` SAN URI nor a subject common name is present.
    case noAgentIdentity
    /// The certificate names more than one agent (several distinct SAN URIs or CNs); we
    /// refuse to guess which one is meant.
    case ambiguousAgentIdentity([String])
    /// The id found in the certificate breaks the identifier rules.
    case invalidAgentID(AgentIdentifierError)

    public var description: String {
        switch self {
        case .unparsableCertificate(let reason):
            return "client certificate cannot be parsed: \(reason)"
        case .noAgentIdentity:
            return "client certificate has neither a \(MCRPTransport.agentURIPrefix)<id> SAN URI nor a subject common name"
        case .ambiguousAgentIdentity(let ids):
            return "client certificate names several agents: \(ids.joined(separator: ", "))"
        case .invalidAgentID(let error):
            return "client certificate: \(error.description)"
        }
    }
}

/// Reads what the server needs to know about a verified client certificate. Call these
/// only after the handshake succeeded: they do not verify anything themselves.
public enum PeerIdentity {
    /// The agent id a client certificate stands for (protocol §2): the SAN URI
    /// `urn:mcrp:agent:<id>` when present, else the subject common name.
    ///
    /// When a SAN URI exists it decides alone: an invalid id there is an error rather than
    /// a reason to fall back to the CN, since falling back would let a certificate carry
    /// two different identities.
    public static func agentID(from certificate: NIOSSLCertificate) throws(PeerIdentityError) -> String {
        let parsed: Certificate
        do {
            parsed = try Certificate(derEncoded: certificate.toDERBytes())
        } catch {
            throw .unparsableCertificate(reason: String(describing: error))
        }
        return try agentID(from: parsed)
    }

    /// `agentID(from:)` for a certificate already parsed by swift-certificates.
    public static func agentID(from certificate: Certificate) throws(PeerIdentityError) -> String {
        let sanIDs: [String]
        do {
            sanIDs = (try certificate.extensions.subjectAlternativeNames ?? SubjectAlternativeNames()).compactMap {
                guard case .uniformResourceIdentifier(let uri) = $0, uri.hasPrefix(MCRPTransport.agentURIPrefix) else {
                    return nil
                }
                return String(uri.dropFirst(MCRPTransport.agentURIPrefix.count))
            }
        } catch {
            throw .unparsableCertificate(reason: "subjectAlternativeName: \(error)")
        }

        let candidates: [String]
        if !sanIDs.isEmpty {
            candidates = sanIDs
        } else {
            candidates = certificate.subject.flatMap { $0 }
                .filter { $0.type == .RDNAttributeType.commonName }
                .compactMap { String($0.value) }
        }
        var distinct: [String] = []
        for id in candidates where !distinct.contains(id) { distinct.append(id) }
        guard let id = distinct.first else { throw .noAgentIdentity }
        guard distinct.count == 1 else { throw .ambiguousAgentIdentity(distinct) }
        do {
            try AgentIdentifier.validate(id)
        } catch {
            throw .invalidAgentID(error)
        }
        return id
    }

    /// The certificate's serial number in the form `RevocationList` stores (lowercase hex,
    /// no separators, no leading zero bytes).
    public static func serialNumber(of certificate: NIOSSLCertificate) -> String {
        SerialNumberFormat.hex(certificate.serialNumber)
    }

    /// End of the certificate's validity, e.g. to warn operators before an agent's
    /// certificate runs out.
    public static func notAfter(of certificate: NIOSSLCertificate) -> Date {
        Date(timeIntervalSince1970: TimeInterval(certificate.notValidAfter))
    }
}

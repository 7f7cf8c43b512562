import Foundation
import NIOCore
import NIOSSL
import RecordingTLS
import Shared

/// Decides who an agent is: from its client certificate (mutual TLS, the default), or from
/// a bearer token where client certificates are not used. Revoked certificates are refused.
struct AgentAuthenticator: Sendable {
    var requireClientCertificate: Bool
    /// token → agent id, for deployments without client certificates.
    var bearerTokens: [String: String]
    /// Serial numbers (hex) of revoked agent certificates, fixed.
    var revokedSerials: Set<String>
    /// The revocation list file, re-read when it changes (`tls.revocationList`).
    var revocationFile: RevocationFile?
    /// Development only: no TLS at all; the agent's claimed id is believed.
    var insecurePlaintext: Bool

    init(requireClientCertificate: Bool = true, bearerTokens: [String: String] = [:], revokedSerials: Set<String> = [],
                revocationFile: RevocationFile? = nil, insecurePlaintext: Bool = false) {
        self.requireClientCertificate = requireClientCertificate
        self.bearerTokens = bearerTokens
        self.revokedSerials = revokedSerials
        self.revocationFile = revocationFile
        self.insecurePlaintext = insecurePlaintext
    }

    /// Returns the authenticated agent id for `hello`, or throws `authenticationFailed`.
    func authenticate(_ hello: Hello, peerCertificate: NIOSSLCertificate?) throws(ProtocolError) -> String {
        let claimed = hello.agentID.value
        if let certificate = peerCertificate {
            let serial = PeerIdentity.serialNumber(of: certificate)
            let revoked = revokedSerials.contains(serial.lowercased()) || revocationFile?.serials().contains(serial.lowercased()) == true
            guard !revoked else {
                throw ProtocolError(.authenticationFailed, "the certificate of agent \(claimed) (serial \(serial)) is revoked")
            }
            let identity: String
            do { identity = try PeerIdentity.agentID(from: certificate) } catch {
                throw ProtocolError(.authenticationFailed, "the client certificate names no valid agent id: \(error)")
            }
            guard identity == claimed else {
                throw ProtocolError(.authenticationFailed, "the client certificate is for agent \(identity), Hello claims \(claimed)")
            }
            return identity
        }
        if let token = hello.bearerToken, !token.isEmpty {
            guard !requireClientCertificate || insecurePlaintext, let mapped = bearerTokens[token] else {
                throw ProtocolError(.authenticationFailed, "bearer token refused")
            }
            guard mapped == claimed else { throw ProtocolError(.authenticationFailed, "the bearer token belongs to agent \(mapped), not \(claimed)") }
            return mapped
        }
        if insecurePlaintext { return claimed }
        throw ProtocolError(.authenticationFailed, "no client certificate and no bearer token")
    }
}

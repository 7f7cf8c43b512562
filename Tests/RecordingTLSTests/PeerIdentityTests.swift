import Foundation
import NIOSSL
import RecordingTLS
import Testing
import X509

@Suite("Peer identity")
struct PeerIdentityTests {
    @Test("The SAN URI takes precedence over the common name")
    func sanTakesPrecedence() throws {
        let ca = try CertificateAuthority.create()
        let leaf = try customLeaf(
            ca: ca, subject: DistinguishedName { CommonName("cn-name") }, sanURIs: ["urn:mcrp:agent:san-name"])
        #expect(try PeerIdentity.agentID(from: leaf.certificate) == "san-name")
    }

    @Test("Without a matching SAN URI the common name is used")
    func commonNameFallback() throws {
        let ca = try CertificateAuthority.create()
        let plain = try customLeaf(ca: ca, subject: DistinguishedName { CommonName("cam-7") })
        #expect(try PeerIdentity.agentID(from: plain.certificate) == "cam-7")
        // Unrelated URIs do not count as an agent identity.
        let other = try customLeaf(
            ca: ca, subject: DistinguishedName { CommonName("cam-8") }, sanURIs: ["https://example.com/cam"])
        #expect(try PeerIdentity.agentID(from: other.certificate) == "cam-8")
    }

    @Test("An invalid id in the SAN is an error, with no fallback to a valid CN")
    func invalidSANNoFallback() throws {
        let ca = try CertificateAuthority.create()
        let leaf = try customLeaf(
            ca: ca, subject: DistinguishedName { CommonName("good") }, sanURIs: ["urn:mcrp:agent:bad id"])
        #expect(throws: PeerIdentityError.invalidAgentID(.invalidCharacter("bad id", character: " "))) {
            try PeerIdentity.agentID(from: leaf.certificate)
        }
    }

    @Test("Invalid common names, missing and ambiguous identities are errors")
    func otherErrors() throws {
        let ca = try CertificateAuthority.create()
        let badCN = try customLeaf(ca: ca, subject: DistinguishedName { CommonName("_cam") })
        #expect(throws: PeerIdentityError.invalidAgentID(.mustStartWithLetterOrDigit("_cam"))) {
            try PeerIdentity.agentID(from: badCN.certificate)
        }
        let anonymous = try customLeaf(ca: ca, subject: DistinguishedName { OrganizationName("Studio") })
        #expect(throws: PeerIdentityError.noAgentIdentity) {
            try PeerIdentity.agentID(from: anonymous.certificate)
        }
        let twoAgents = try customLeaf(
            ca: ca, subject: DistinguishedName { CommonName("a") },
            sanURIs: ["urn:mcrp:agent:one", "urn:mcrp:agent:two"])
        #expect(throws: PeerIdentityError.ambiguousAgentIdentity(["one", "two"])) {
            try PeerIdentity.agentID(from: twoAgents.certificate)
        }
    }

    @Test("Serial number and notAfter agree with swift-certificates' view")
    func serialAndExpiry() throws {
        let ca = try CertificateAuthority.create()
        let leaf = try customLeaf(ca: ca, subject: DistinguishedName { CommonName("cam-1") })
        let expectedSerial = leaf.parsed.serialNumber.bytes
            .drop(while: { $0 == 0 })
            .map { String(format: "%02x", $0) }.joined()
        #expect(PeerIdentity.serialNumber(of: leaf.certificate) == expectedSerial)
        #expect(PeerIdentity.notAfter(of: leaf.certificate) == leaf.parsed.notValidAfter)

        let issued = try ca.issueAgentCertificate(agentID: "cam-2")
        let certificate = try NIOSSLCertificateFromPEM(issued.certificatePEM)
        #expect(PeerIdentity.serialNumber(of: certificate) == issued.serialNumber)
        #expect(PeerIdentity.notAfter(of: certificate) == issued.notAfter)
    }
}

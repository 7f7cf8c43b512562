import Foundation
import RecordingTLS
import Testing
import TestSupport

@Suite("Revocation list")
struct RevocationListTests {
    @Test("save/load round trip in the documented JSON format")
    func roundTrip() throws {
        let temporary = try TemporaryDirectory(prefix: "recording-tls-tests")
        defer { temporary.remove() }
        let path = temporary.file(RevocationList.fileName)
        let when = Date(timeIntervalSince1970: 1_750_000_000)

        var list = RevocationList()
        try list.revoke(serial: "4A:0B:FF", agentID: "cam-1", at: when)
        try list.revoke(serial: "00beef", agentID: "cam-2", at: when)
        try list.revoke(serial: "4a0bff", agentID: "cam-1", at: when)  // duplicate: ignored
        #expect(list.entries.count == 2)
        try list.save(path: path)

        let loaded = try RevocationList.load(path: path)
        #expect(loaded == list)
        #expect(loaded.contains(serial: "4a0bff"))
        #expect(loaded.contains(serial: "4A:0B:FF"))
        #expect(loaded.contains(serial: "BEEF"))
        #expect(!loaded.contains(serial: "abcd"))

        // The on-disk shape other tools (and operators) rely on.
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as! [String: Any]
        let revoked = try #require(json["revoked"] as? [[String: Any]])
        #expect(revoked.count == 2)
        #expect(revoked[0]["serial"] as? String == "4a0bff")
        #expect(revoked[0]["agent"] as? String == "cam-1")
        #expect(revoked[0]["revokedAt"] as? String == "2025-06-15T15:06:40Z")
    }

    @Test("An issued certificate's serial matches what the server reads from the peer")
    func serialFromIssuedCertificate() throws {
        let pki = try TestPKI()
        var list = RevocationList()
        try list.revoke(serial: pki.agent.serialNumber, agentID: pki.agentID)
        let peer = try NIOSSLCertificateFromPEM(pki.agent.certificatePEM)
        #expect(list.contains(serial: PeerIdentity.serialNumber(of: peer)))
        let other = try NIOSSLCertificateFromPEM(pki.ca.issueAgentCertificate(agentID: pki.agentID).certificatePEM)
        #expect(!list.contains(serial: PeerIdentity.serialNumber(of: other)))
    }

    @Test("A missing file is an empty list unless required")
    func missingFile() throws {
        let temporary = try TemporaryDirectory(prefix: "recording-tls-tests")
        defer { temporary.remove() }
        let path = temporary.file("revoked.json")
        #expect(try RevocationList.load(path: path).entries.isEmpty)
        #expect(throws: RevocationListError.file(.missing(path: path))) {
            try RevocationList.load(path: path, allowMissing: false)
        }
    }

    @Test("Malformed files and serials are reported")
    func malformed() throws {
        let temporary = try TemporaryDirectory(prefix: "recording-tls-tests")
        defer { temporary.remove() }
        let path = try temporary.write("{\"revoked\": 3}", to: "revoked.json")
        let error = #expect(throws: RevocationListError.self) { try RevocationList.load(path: path) }
        guard case .malformed(let reported, _) = error else {
            Issue.record("unexpected error \(String(describing: error))")
            return
        }
        #expect(reported == path)

        let badSerial = try temporary.write(
            #"{"revoked":[{"serial":"xyz","agent":"a","revokedAt":"2025-01-01T00:00:00Z"}]}"#, to: "bad.json")
        #expect(throws: RevocationListError.self) { try RevocationList.load(path: badSerial) }

        var list = RevocationList()
        #expect(throws: RevocationListError.invalidSerialNumber("not-hex")) {
            try list.revoke(serial: "not-hex", agentID: "a")
        }
    }
}

import Foundation
import RecordingTLS
@testable import RecordServerCore
import Testing
import TestSupport

/// What the `record-server` executable promises an operator at start-up (issue 13, finding 6):
/// valid but risky settings are logged as warnings before it serves, and every configuration
/// error exits 64 — the status the shipped unit does not restart on — with a message naming
/// the setting, never 1 and never a restart loop.
@Suite("Start-up contract of the record-server executable", .serialized)
struct StartupContractTests {
    @Test("fsync none, an admin API on every interface and a token file others can read are each logged as a warning at start-up")
    func riskySettingsAreLoggedAtStartUp() async throws {
        let fixture = try ServerFixture()
        let server = try ServerProcess(fixture: fixture, adminPort: try LoopbackPort.free())
        let tokenFile = fixture.directory + "/admin-token"
        try ServerFixture.adminToken.write(toFile: tokenFile, atomically: true, encoding: .utf8)
        #expect(chmod(tokenFile, 0o644) == 0)
        try server.reconfigure {
            $0.fsync = .none
            $0.admin.host = "0.0.0.0"
            $0.admin.token = nil
            $0.admin.tokenFile = tokenFile
        }
        try server.start()
        try await server.waitUntilListening()
        server.terminate()
        let warnings = server.log.split(separator: "\n").filter { $0.contains("warning") && $0.contains("configuration:") }
        #expect(warnings.contains { $0.contains("fsync is \"none\"") }, "\(server.log)")
        #expect(warnings.contains { $0.contains("listens on 0.0.0.0") }, "\(server.log)")
        #expect(warnings.contains { $0.contains("\(tokenFile) (admin.tokenFile) is readable by group or others") }, "\(server.log)")
    }

    @Test("the default settings start without a configuration warning")
    func defaultsStartWithoutWarnings() async throws {
        let fixture = try ServerFixture()
        let server = try ServerProcess(fixture: fixture, adminPort: try LoopbackPort.free())
        try server.start()
        try await server.waitUntilListening()
        server.terminate()
        #expect(!server.log.contains("configuration:"), "\(server.log)")
    }

    @Test("an expired server certificate exits 64 naming its date; one that expires within 14 days starts with a warning naming it")
    func serverCertificateDates() async throws {
        let fixture = try ServerFixture()
        let day: TimeInterval = 86_400
        let expired = try fixture.ca.issueServerCertificate(hostnames: ["localhost"], validity: day, now: Date().addingTimeInterval(-3 * day))
        try expired.write(certPath: fixture.configuration.tls.certificate, keyPath: fixture.configuration.tls.privateKey)
        let refused = try ServerProcess(fixture: fixture, name: "expired")
        try refused.start()
        #expect(try await refused.waitForExit() == 64, "\(refused.log)")
        #expect(refused.log.contains("tls.certificate"), "\(refused.log)")
        #expect(refused.log.contains("expired on \(CertificateValidity.format(expired.notAfter))"), "\(refused.log)")

        let soon = try fixture.ca.issueServerCertificate(hostnames: ["localhost"], validity: 4.5 * day, now: Date().addingTimeInterval(-day))
        try soon.write(certPath: fixture.configuration.tls.certificate, keyPath: fixture.configuration.tls.privateKey)
        let warned = try ServerProcess(fixture: fixture, name: "soon")
        try warned.start()
        try await warned.waitUntilListening()
        warned.terminate()
        #expect(warned.log.contains("expires on \(CertificateValidity.format(soon.notAfter)) (in 3 days)"), "\(warned.log)")
    }

    /// Each broken configuration, the text its message must contain, and how to break the
    /// fixture's working configuration file.
    static let brokenConfigurations: [(name: String, mentions: [String], edit: @Sendable (Data) throws -> Data)] = [
        ("a misspelt key", ["dataDir", "dataDirectory"], { try editJSON($0) { $0["dataDir"] = "/tmp/x" } }),
        ("a port out of range", ["ingest.port", "70000"], { try editJSON($0) { $0["ingest"] = ["host": "127.0.0.1", "port": 70000] } }),
        ("a missing certificate", ["tls.certificate", "/nonexistent/server.pem"], {
            try editJSON($0) { json in
                var tls = json["tls"] as? [String: Any] ?? [:]
                tls["certificate"] = "/nonexistent/server.pem"
                json["tls"] = tls
            }
        }),
        ("a wrong type", ["fragmentSeconds"], { try editJSON($0) { $0["fragmentSeconds"] = "one" } }),
        ("a file that is not JSON", ["JSON"], { _ in Data("{ this is not JSON".utf8) }),
        ("a webhook without its secret file", ["webhooks[0].secretFile", "/nonexistent/hook.secret"], {
            try editJSON($0) { $0["webhooks"] = [["url": "https://hooks.example.com/x", "secretFile": "/nonexistent/hook.secret"]] }
        }),
    ]

    static func editJSON(_ data: Data, _ edit: (inout [String: Any]) -> Void) throws -> Data {
        var json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        edit(&json)
        return try JSONSerialization.data(withJSONObject: json)
    }

    @Test("every configuration error exits 64 with a message naming the setting",
          arguments: brokenConfigurations.indices)
    func configurationErrorsExit64(index: Int) async throws {
        let broken = Self.brokenConfigurations[index]
        let fixture = try ServerFixture()
        let server = try ServerProcess(fixture: fixture)
        let url = URL(fileURLWithPath: server.configPath)
        try broken.edit(try Data(contentsOf: url)).write(to: url)
        try server.start()
        #expect(try await server.waitForExit() == 64, "\(broken.name): \(server.log)")
        for mention in broken.mentions {
            #expect(server.log.contains(mention), "\(broken.name): the message does not name \(mention): \(server.log)")
        }
        #expect(!server.log.contains(".build/checkouts"), "\(broken.name): library build paths in \(server.log)")
    }
}

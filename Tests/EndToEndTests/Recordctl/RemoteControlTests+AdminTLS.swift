import Foundation
import Testing
import TestSupport

/// `admin.tls` (`--admin-tls`): the admin API and the web console over HTTPS with the server's
/// own certificate, reached by recordctl with `--ca-file` and by curl; the console's cookie is
/// then `Secure`, and plain HTTP on that port gets no answer.
extension RemoteControlTests {
    @Test(.timeLimit(.minutes(2)))
    func theAdminListenerServesHTTPSWithTheServersCertificate() async throws {
        let fixture = try ServerFixture(prefix: "admin-tls")
        fixture.configuration.admin.tls = true
        try await fixture.start()
        defer { Task { await fixture.stop() } }
        let port = try #require(fixture.running?.adminPort)
        let https = "https://127.0.0.1:\(port)"
        let env = ["RECORDCTL_SERVER": https, "RECORDCTL_TOKEN_FILE": fixture.adminTokenFile]

        let trusted = try await offPool { try recordctl(["agents", "--json", "--ca-file", fixture.caPath], environment: env) }
        #expect(trusted.status == 0, "\(trusted.output)")
        #expect(try trusted.json()["agents"] is [Any])
        let byEnvironment = try await offPool { try recordctl(["agents"], environment: env.merging(["RECORDCTL_CA_FILE": fixture.caPath]) { $1 }) }
        #expect(byEnvironment.status == 0, "\(byEnvironment.output)")
        // Without our CA the certificate is not trusted: refused, saying why.
        let untrusted = try await offPool { try recordctl(["agents"], environment: env) }
        #expect(untrusted.status == 3 && untrusted.output.lowercased().contains("certificate"), "\(untrusted.output)")
        let missing = try await offPool { try recordctl(["agents", "--ca-file", fixture.directory + "/none.pem"], environment: env) }
        #expect(missing.status == 2 && missing.output.contains("none.pem"), "\(missing.output)")

        // The console's sign-in over HTTPS sets a Secure cookie.
        let signIn = try await runToolOffPool("curl", ["-s", "-o", "/dev/null", "-D", "-", "--cacert", fixture.caPath,
                                                        "--data-urlencode", "token=\(ServerFixture.adminToken)", https + "/console/sign-in"])
        let headers = signIn.stdoutText.lowercased()
        #expect(headers.hasPrefix("http/1.1 303"), "\(signIn.stdoutText)")
        #expect(headers.contains("set-cookie: recorder_console=") && headers.contains("; httponly; samesite=strict") && headers.contains("; secure"),
                "\(signIn.stdoutText)")
        // Plain HTTP on the TLS port: no HTTP answer.
        let plain = try await runToolOffPool("curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10", "http://127.0.0.1:\(port)/health"])
        #expect(plain.status != 0 && plain.stdoutText == "000", "status \(plain.status), \(plain.stdoutText)")
    }
}

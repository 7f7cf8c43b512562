import ArgumentParser
import Foundation
import RecordingTLS
import Testing
import TestSupport
@testable import CaptureAgentCore

@Suite("capture-agent run: flags and the config file")
struct RunCommandTests {
    /// A CA in a fresh directory (TestSupport's ``ServerFixture``, never started) and agent
    /// `cam-e2e`'s certificate from it, as `cam-e2e.pem` and `cam-e2e-key.pem` there.
    private func agentFixture() throws -> ServerFixture {
        let fixture = try ServerFixture(prefix: "capture-agent-tests", adminToken: nil)
        _ = try fixture.writeAgentCertificate("cam-e2e")
        return fixture
    }

    /// `certificate` names the PEM pair in the fixture's directory (`NAME.pem`, `NAME-key.pem`);
    /// `server` the `--server` flags' values (none: the config file's must serve).
    private func command(_ fixture: ServerFixture, _ extra: [String], certificate: String = "cam-e2e",
                         server: [String] = ["127.0.0.1:7443"]) throws -> RunCommand {
        try RunCommand.parse(server.flatMap { ["--server", $0] } + [
            "--ca", fixture.caPath,
            "--cert", fixture.directory + "/\(certificate).pem", "--key", fixture.directory + "/\(certificate)-key.pem",
            "--agent-id", "cam-e2e", "--source", "front=test:320x240@30",
        ] + extra)
    }

    @Test func theStopTimeoutComesFromTheFlagThenTheFileThenTheDefault() throws {
        let fixture = try agentFixture()
        let config = try fixture.scratch.file("agent.json", Array(#"{"stopTimeoutSeconds": 12.5}"#.utf8))
        #expect(try command(fixture, []).resolve().0.stopTimeout == 30_000_000_000)
        #expect(try command(fixture, ["--config", config]).resolve().0.stopTimeout == 12_500_000_000)
        #expect(try command(fixture, ["--config", config, "--stop-timeout", "3"]).resolve().0.stopTimeout == 3_000_000_000)
    }

    @Test(arguments: ["0", "-1", "3601"])
    func anOutOfRangeStopTimeoutIsRefused(value: String) throws {
        let fixture = try agentFixture()
        let error = #expect(throws: ConfigError.self) { try command(fixture, ["--stop-timeout=\(value)"]).resolve() }
        #expect(error?.message.contains("--stop-timeout") == true, "\(error?.message ?? "")")
    }

    /// The testing clock options: a skew when given, none by default, and a clear refusal of
    /// values no host's clock could have.
    @Test func theClockSkewOptionsAreCheckedAndStamped() throws {
        let fixture = try agentFixture()
        #expect(try command(fixture, []).resolve().0.clockSkew == nil)
        let skew = try #require(try command(fixture, ["--clock-offset", "7200.5", "--clock-drift-ppm=-80"]).resolve().0.clockSkew)
        #expect(skew.offset == 7_200_500_000_000)
        #expect(skew.driftPPM == -80)
        for (flags, named) in [(["--clock-drift-ppm", "1500"], "--clock-drift-ppm"), (["--clock-offset", "1e9"], "--clock-offset"),
                               (["--clock-offset=-864000"], "before 0")] {
            let error = #expect(throws: ConfigError.self) { try command(fixture, flags).resolve() }
            #expect(error?.message.contains(named) == true, "\(error?.message ?? "")")
        }
    }

    /// An agent certificate outside its validity can never connect: the agent refuses to start
    /// and names the date (issue 13, finding 7); one close to expiry starts with a warning.
    @Test func anExpiredOrNotYetValidCertificateIsRefusedWithItsDate() throws {
        let fixture = try agentFixture()
        let day: TimeInterval = 86_400
        // Dates at hh:mm:59.7, the case where rounding to whole seconds moves the minute.
        let edge = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 / 60).rounded(.down) * 60 + 59.7)
        for (name, notBefore, words) in [("expired", edge.addingTimeInterval(-2 * day), "expired on"),
                                          ("future", edge.addingTimeInterval(2 * day), "not valid before")] {
            let certificate = try fixture.ca.issueAgentCertificate(agentID: "cam-e2e", validity: day, notBefore: notBefore)
            try certificate.write(certPath: fixture.directory + "/\(name).pem", keyPath: fixture.directory + "/\(name)-key.pem")
            let error = #expect(throws: ConfigError.self) { try command(fixture, [], certificate: name).resolve() }
            // The dates as the certificate holds them: X.509 times have whole seconds, rounded to
            // the nearest, so a `notBefore` at hh:mm:59.5 or later is stored in the next minute.
            let stored = try #require(CertificateValidity.read(pemFile: fixture.directory + "/\(name).pem"))
            #expect(abs(stored.notBefore.timeIntervalSince(notBefore)) <= 0.5)
            let date = CertificateValidity.format(name == "expired" ? stored.notAfter : stored.notBefore)
            #expect(error?.message.contains("\(words) \(date)") == true, "\(error?.message ?? "")")
            #expect(error?.message.contains("recordctl ca issue agent cam-e2e") == true, "\(error?.message ?? "")")
        }
        let soon = try fixture.ca.issueAgentCertificate(agentID: "cam-e2e", validity: 2.5 * day, notBefore: Date().addingTimeInterval(-day))
        try soon.write(certPath: fixture.directory + "/soon.pem", keyPath: fixture.directory + "/soon-key.pem")
        let settings = try command(fixture, [], certificate: "soon").resolve().0
        #expect(settings.startupWarnings.count == 1)
        #expect(settings.startupWarnings.first?.contains("expires on \(CertificateValidity.format(soon.notAfter)) (in 1 day)") == true,
                "\(settings.startupWarnings)")
        #expect(try command(fixture, []).resolve().0.startupWarnings.isEmpty)
    }

    /// One address is as it always was; a list (commas, repeated flags, or the file's `server`
    /// and `servers`) keeps its order, and each host is its own TLS name (none for IP literals).
    @Test func serverAddressesComeAsOneAListOrRepeatedFlags() throws {
        let fixture = try agentFixture()
        #expect(try command(fixture, []).resolve().0.servers == [ServerAddress(host: "127.0.0.1", port: 7443, tlsHostname: nil)])
        let listed = try command(fixture, [], server: ["rec-a.example:7443, rec-b.example", "[::1]:9000"]).resolve().0.servers
        #expect(listed == [ServerAddress(host: "rec-a.example", port: 7443, tlsHostname: "rec-a.example"),
                           ServerAddress(host: "rec-b.example", port: 7443, tlsHostname: "rec-b.example"),
                           ServerAddress(host: "::1", port: 9000, tlsHostname: nil)])

        let comma = try fixture.scratch.file("comma.json", Array(#"{"server": "10.0.0.1:7443,10.0.0.2:7443"}"#.utf8))
        let array = try fixture.scratch.file("array.json", Array(#"{"servers": ["10.0.0.1:7443", "10.0.0.2:7443"]}"#.utf8))
        let expected = [ServerAddress(host: "10.0.0.1", port: 7443, tlsHostname: nil), ServerAddress(host: "10.0.0.2", port: 7443, tlsHostname: nil)]
        #expect(try command(fixture, ["--config", comma], server: []).resolve().0.servers == expected)
        #expect(try command(fixture, ["--config", array], server: []).resolve().0.servers == expected)
        // A flag wins over the file, as for every key.
        #expect(try command(fixture, ["--config", array]).resolve().0.servers == [ServerAddress(host: "127.0.0.1", port: 7443, tlsHostname: nil)])
    }

    @Test(arguments: [
        ("a.example:7443,,b.example:7443", #"entry 2 is empty"#),
        ("a.example:7443,", #"entry 2 is empty"#),
        ("a.example:7443,b.example:http", #"server "b.example:http": bad port"#),
        ("a.example:7443,b.example:70000", "port 70000 is not 1…65535"),
        ("a.example:7443,a.example", "a.example is listed twice"),
    ])
    func aBadServerListIsRefusedNamingTheEntry(text: String, expected: String) throws {
        let fixture = try agentFixture()
        let error = #expect(throws: ConfigError.self) { try command(fixture, [], server: [text]).resolve() }
        #expect(error?.message.contains(expected) == true, "\(error?.message ?? "")")
    }

    @Test func aConfigFileWithBothServerKeysOrAnEmptyListIsRefused() throws {
        let fixture = try agentFixture()
        let both = try fixture.scratch.file("both.json", Array(#"{"server": "a.example", "servers": ["b.example"]}"#.utf8))
        let empty = try fixture.scratch.file("empty.json", Array(#"{"servers": []}"#.utf8))
        for (path, expected) in [(both, #"both "server" and "servers""#), (empty, #"config "servers": no server address"#)] {
            let error = #expect(throws: ConfigError.self) { try command(fixture, ["--config", path], server: []).resolve() }
            #expect(error?.message.contains(expected) == true, "\(error?.message ?? "")")
        }
        let none = #expect(throws: ConfigError.self) { try command(fixture, [], server: []).resolve() }
        #expect(none?.message.contains("--server HOST:PORT is required") == true, "\(none?.message ?? "")")
    }
}

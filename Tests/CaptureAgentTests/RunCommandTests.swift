import ArgumentParser
import Foundation
import Testing
@testable import CaptureAgentCore

@Suite("capture-agent run: flags and the config file")
struct RunCommandTests {
    private func command(_ fixture: EndToEndFixture, _ extra: [String]) throws -> RunCommand {
        try RunCommand.parse([
            "--server", "127.0.0.1:7443", "--ca", fixture.caPath,
            "--cert", fixture.directory.path + "/agent.pem", "--key", fixture.directory.path + "/agent-key.pem",
            "--agent-id", "cam-e2e", "--source", "front=test:320x240@30",
        ] + extra)
    }

    @Test func theStopTimeoutComesFromTheFlagThenTheFileThenTheDefault() throws {
        let fixture = try EndToEndFixture()
        let config = try fixture.directory.file("agent.json", Array(#"{"stopTimeoutSeconds": 12.5}"#.utf8))
        #expect(try command(fixture, []).resolve().0.stopTimeout == 30_000_000_000)
        #expect(try command(fixture, ["--config", config]).resolve().0.stopTimeout == 12_500_000_000)
        #expect(try command(fixture, ["--config", config, "--stop-timeout", "3"]).resolve().0.stopTimeout == 3_000_000_000)
    }

    @Test(arguments: ["0", "-1", "3601"])
    func anOutOfRangeStopTimeoutIsRefused(value: String) throws {
        let fixture = try EndToEndFixture()
        let error = #expect(throws: ConfigError.self) { try command(fixture, ["--stop-timeout=\(value)"]).resolve() }
        #expect(error?.message.contains("--stop-timeout") == true, "\(error?.message ?? "")")
    }
}

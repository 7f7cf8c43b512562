import ArgumentParser
import Testing
import TestSupport
@testable import RecordCtlCore

@Suite("recordctl help text")
struct HelpTests {
    static let connectionOptions = ["--server <url>", "--token-file <path>", "--token <token>", "--timeout <seconds>"]

    /// Each subcommand with the options its help must show.
    static let expected: [(command: any ParsableCommand.Type, options: [String], connection: Bool)] = [
        (AgentsCommand.self, ["--json"], true),
        (ServersCommand.self, ["--json"], true),
        (SessionsCommand.self, ["--json"], true),
        (TopCommand.self, ["--interval <seconds>", "--once", "--count <n>"], true),
        (StartCommand.self, ["--agent <id>", "--label <key=value>", "--wait <seconds>", "--json"], true),
        (StopCommand.self, ["<session>", "--json"], true),
        (CancelCommand.self, ["<session>", "--json"], true),
        (RecordingsCommand.self, ["--agent <id>", "--since <date>", "--until <date>", "--status <status>", "--limit <n>", "--json"], true),
        (RecordingCommand.self, ["<id>", "--json"], true),
        (DownloadCommand.self, ["<id>", "--output <file>", "--force", "--json"], true),
        (ExportCommand.self, ["<session>", "--from <time>", "--to <time>", "--track <label>", "--output <file>", "--force", "--json"], true),
        (EventsCommand.self, ["--count <n>", "--json"], true),
        (DeleteCommand.self, ["<id>", "--json"], true),
        (InspectCommand.self, ["<file>", "--json"], false),
        (VerifyCommand.self, ["<file>", "--json"], false),
        (RecoverCommand.self, ["<file>", "--json"], false),
        (CACommand.self, [], false),
        (DemoCommand.self, ["--seconds", "--output", "--size", "--fps", "--faststart"], false),
    ]

    @Test func everySubcommandIsCoveredAndHasAnAbstract() {
        let listed = RecordCtl.configuration.subcommands.map { $0.configuration.commandName ?? "" }
        #expect(Set(listed) == Set(Self.expected.map { $0.command.configuration.commandName ?? "" }))
        let root = RecordCtl.helpMessage()
        for command in RecordCtl.configuration.subcommands {
            #expect(!command.configuration.abstract.isEmpty, "\(command)")
            #expect(root.contains(command.configuration.commandName ?? "?"), "root help lists \(command)")
        }
        #expect(root.contains("Exit codes"))
    }

    @Test(arguments: 0..<17)
    func helpShowsAbstractAndOptions(index: Int) {
        let entry = Self.expected[index]
        let help = RecordCtl.helpMessage(for: entry.command, columns: 1000)
        #expect(help.contains("OVERVIEW: " + entry.command.configuration.abstract), "\(help)")
        #expect(help.contains("USAGE: recordctl \(entry.command.configuration.commandName ?? "")"), "\(help)")
        for option in entry.options + (entry.connection ? Self.connectionOptions : []) {
            #expect(help.contains(option), "\(entry.command) help lacks \(option):\n\(help)")
        }
        if entry.connection {
            #expect(help.contains("RECORDCTL_SERVER") && help.contains("RECORDCTL_TOKEN"))
        }
    }

    @Test func caSubcommandsHaveHelp() {
        for sub in CACommand.configuration.subcommands {
            #expect(!sub.configuration.abstract.isEmpty, "\(sub)")
            #expect(RecordCtl.helpMessage(for: sub, columns: 1000).contains("OVERVIEW:"))
        }
    }

    @Test func theTokenNeverAppearsInHelpOrUsageErrors() {
        let token = "s3cret-token-value"
        let help = RecordCtl.helpMessage(for: AgentsCommand.self, columns: 1000)
        #expect(!help.contains(token))
        // A usage error after a given token does not echo it.
        do {
            _ = try RecordCtl.parseAsRoot(["agents", "--token", token, "--bogus"])
            Issue.record("parsing should fail")
        } catch {
            #expect(!RecordCtl.fullMessage(for: error).contains(token))
        }
    }

    @Test func usageErrorsExitWith2() {
        #expect(RecordCtl.run(arguments: ["recordings", "--limit", "0"]) == 2)
        #expect(RecordCtl.run(arguments: ["start", "--agent", "cam-1", "--label", "novalue"]) == 2)
        #expect(RecordCtl.run(arguments: ["nosuchcommand"]) == 2)
        #expect(RecordCtl.run(arguments: ["stop"]) == 2)
    }

    @Test func topKeepsWatchingWhenTheServerIsUnreachable() throws {
 // Port 1 on loopback: nothing listens there, connections are refused at once.
        let result = try recordctl(["top", "--server", "http://127.0.0.1:1", "--token", "x", "--count", "3", "--interval", "0.1"])
        #expect(result.status == 3, "the last poll failed: \(result.output)")
        #expect(result.stdout.components(separatedBy: "cannot reach the server").count - 1 == 3,
                "one frame per poll, each saying why, instead of exiting at the first: \(result.stdout)")
    }
}

public import ArgumentParser
import Foundation

/// The admin CLI's root command.
public struct RecordCtl: ParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "recordctl",
        abstract: "Administer record-server and recordings: agents, live sessions, remote control, the catalog, MP4 file tools and certificates.",
        discussion: """
        Commands that talk to record-server use its admin API: --server (or $RECORDCTL_SERVER, default \
        http://127.0.0.1:7444) and the admin token from --token-file, $RECORDCTL_TOKEN or $RECORDCTL_TOKEN_FILE. \
        Exit codes: 0 success, 1 the operation failed, 2 usage error, 3 record-server unreachable or the token refused.
        """,
        subcommands: [AgentsCommand.self, ServersCommand.self, SessionsCommand.self, TopCommand.self, StartCommand.self, StopCommand.self,
                      CancelCommand.self, RecordingsCommand.self, RecordingCommand.self, DownloadCommand.self, ExportCommand.self, EventsCommand.self, DeleteCommand.self,
                      InspectCommand.self, VerifyCommand.self, RecoverCommand.self, CACommand.self, DemoCommand.self]
    )
    public init() {}

    /// Runs recordctl with these arguments and returns the process exit code, printing errors to
    /// stderr: 0 ok, 1 operation failed, 2 usage, 3 cannot reach or authenticate.
    public static func run(arguments: [String]) -> Int32 {
        do {
            var command = try parseAsRoot(arguments)
            try command.run()
            return 0
        } catch let failure as CLIFailure {
            printError("recordctl: \(failure.message)")
            return failure.code.rawValue
        } catch {
            let code = exitCode(for: error)
            if code == .success {
                print(fullMessage(for: error))
                return 0
            }
            let message = fullMessage(for: error)
            if !message.isEmpty { printError(message) }
            if code == .validationFailure { return CLIFailure.Code.usage.rawValue }
            return code.rawValue
        }
    }

    /// Entry point of the `recordctl` executable (replaces ArgumentParser's, for the exit codes above).
    public static func main() {
        let code = run(arguments: Array(CommandLine.arguments.dropFirst()))
        fflush(nil)
        Foundation.exit(code)
    }
}

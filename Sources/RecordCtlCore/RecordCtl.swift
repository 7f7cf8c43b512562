import ArgumentParser

/// The admin CLI's root command.
public struct RecordCtl: ParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "recordctl",
        abstract: "Administer recordings: inspect and recover MP4 files, manage certificates, run a demo.",
        subcommands: [DemoCommand.self, InspectCommand.self, RecoverCommand.self, CACommand.self]
    )
    public init() {}
}

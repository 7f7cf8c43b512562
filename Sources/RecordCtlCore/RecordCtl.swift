import ArgumentParser

/// The admin CLI's root command.
public struct RecordCtl: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "recordctl",
        abstract: "Administer recordings: inspect, verify and recover MP4 files, run a demo.",
        subcommands: []
    )
    public init() {}
}

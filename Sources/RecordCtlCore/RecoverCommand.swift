import ArgumentParser
import Foundation
import Shared

/// `recordctl recover FILE`: finalize a recording left behind by a crash.
struct RecoverCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recover",
        abstract: "Finalize a crashed recording in place into a regular MP4, keeping every complete fragment."
    )

    @Argument(help: "The fragmented MP4 a crash left behind.") var file: String
    @Flag(help: "Print JSON instead of text.") var json = false

    func run() throws {
        let showProgress = !json && isatty(STDERR_FILENO) != 0
        let report: MP4Recovery.Report
        do {
            report = try MP4Recovery.recover(path: file) { done, total in
                if showProgress, total > 0 { printError(String(format: "scanning %3.0f%%", Double(done) * 100 / Double(total))) }
            }
        } catch {
            throw CLIFailure(.failed, "cannot recover \(file): \(error.message)")
        }
        if json {
            let object: [String: Any] = ["path": report.path, "already_finalized": report.alreadyFinalized,
                                         "fragments": report.fragmentsRecovered, "samples": report.samplesRecovered,
                                         "bytes_discarded": report.bytesDiscarded, "size": report.fileSize]
            let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
            print(String(decoding: data, as: UTF8.self))
        } else if report.alreadyFinalized {
            print("\(file): already a finalized MP4; nothing to do.")
        } else {
            print("\(file): recovered \(report.samplesRecovered) samples in \(report.fragmentsRecovered) fragments; " +
                  "discarded a torn tail of \(report.bytesDiscarded) bytes\(report.tornReason.map { " (\($0))" } ?? ""); " +
                  "now a regular MP4 of \(Formatting.bytes(report.fileSize)).")
        }
    }
}

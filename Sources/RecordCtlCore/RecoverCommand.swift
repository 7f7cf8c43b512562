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
        // A running server is still writing its unfinished files: finalizing one under it
        // would cut the recording short (and the server's own finish would then fail).
        // (The server finalizes its own files, dormant ones included, so there is never a need.)
        if case .some(let pid) = DataDirectoryLock.holder(ofFileIn: file) {
            throw CLIFailure(.failed, "\(file) belongs to a running record-server (\(pid.map { "pid \($0)" } ?? "pid unknown")) "
                             + "that may still be writing it; stop its session (recordctl stop SESSION) or stop the server, then recover")
        }
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

import Foundation

/// What recovery did with each file of a session found unfinished after a restart and not
/// resumed. The session keeps it, so that catalog rows whose write failed are written again
/// from it: recovering the files a second time would see the first attempt's work (a file
/// already finalized, an empty one already removed, a failed one's row already `failed`) and
/// could call a failed session `recovered`.
struct RecoveryResult: Sendable, Equatable {
    enum FileOutcome: Sendable, Equatable {
        /// Finalized by recovery: the row to write (status `recovered`, its size).
        case recovered(RecordingRecord)
        /// Not one fragment of it became durable: the file is removed, and so is its row.
        case removedEmpty(RecordingRecord)
        /// Recovery refused it: the row to write (status `failed`, why).
        case failed(RecordingRecord)

        var record: RecordingRecord {
            switch self {
            case .recovered(let r), .removedEmpty(let r), .failed(let r): r
            }
        }
    }

    var files: [FileOutcome] = []

    /// `failed` when a file could not be recovered, or when nothing was ever durable.
    var status: RecordingStatus { reason == nil ? .recovered : .failed }

    /// Why the session failed (nil when it is `recovered`), as its row says.
    var reason: String? {
        let failures = files.compactMap { if case .failed(let r) = $0 { "\(r.path): \(r.error ?? "recovery failed")" } else { nil } }
        if !failures.isEmpty { return failures.joined(separator: "; ") }
        let recovered = files.contains { if case .recovered = $0 { true } else { false } }
        let removed = files.contains { if case .removedEmpty = $0 { true } else { false } }
        return !recovered && removed ? "no fragment was ever durable: nothing was recorded" : nil
    }
}

import Foundation
import Logging
import Shared

/// Brings a finished session's catalog rows in line with the files it left, read back with
/// our MP4 reader: each recording's size, duration and start, each track's sample and byte
/// counts (summed over the session's files) — so the catalog says what the files hold even
/// where in-memory counters were reset by a restart or never filled (a recovered file). A
/// track still `active` when its session ended has `ended`.
///
/// Called by every way a session finishes (finalize, failure, recovery of a session whose
/// agent did not come back) after the files are in their final state.
struct CatalogReconciler {
    let catalog: any RecordingCatalog
    let logger: Logger
    let metrics: IngestMetrics

    /// Returns whether every read and write succeeded.
    @discardableResult
    func reconcile(sessionID: String) -> Bool {
        var clean = true
        guard let recordings = read("recordings of \(sessionID)", { try catalog.recordings(sessionID: sessionID) })
        else { return false }
        var samples: [String: Int64] = [:], bytes: [String: Int64] = [:]
        // Whether every file was read: only then do tracks that no file holds count 0 samples.
        var readAll = true
        for var recording in recordings where recording.status != .recording {
            // Not on this disk (its local copy removed after the upload): not read, so the
            // counts it contributes are not known here and the tracks keep theirs.
            guard FileManager.default.fileExists(atPath: recording.path) else {
                readAll = false
                continue
            }
            let inspection: MP4Inspection
            do {
                inspection = try MP4Inspection.inspect(path: recording.path)
            } catch {
                logger.warning("cannot read a finished recording back for the catalog", metadata: [
                    "session": "\(sessionID)", "file": "\(recording.path)", "error": "\(error.message)"])
                readAll = false
                continue
            }
            recording.sizeBytes = Int64(inspection.fileSize)
            if inspection.durationSeconds > 0 { recording.durationSeconds = inspection.durationSeconds }
            if !write("recording \(recording.id)", { try catalog.upsertRecording(recording) }) { clean = false }
            for track in inspection.tracks {
                samples[track.label, default: 0] += Int64(track.sampleCount)
                bytes[track.label, default: 0] += Int64(track.payloadBytes)
            }
        }
        guard let tracks = read("tracks of \(sessionID)", { try catalog.tracks(sessionID: sessionID) }) else { return false }
        for var track in tracks {
            if let count = samples[track.label] ?? (readAll ? 0 : nil) {
                track.samples = count
                track.bytes = bytes[track.label] ?? 0
            }
            if track.status == .active { track.status = .ended }
            if !write("track \(track.label) of \(sessionID)", { try catalog.upsertTrack(track) }) { clean = false }
        }
        return clean
    }

    private func read<T>(_ what: String, _ body: () throws -> T) -> T? {
        do { return try body() } catch {
            logger.error("catalog read failed", metadata: ["what": "\(what)", "error": "\(error)"])
            metrics.catalogWriteFailed()
            return nil
        }
    }

    private func write(_ what: String, _ body: () throws -> Void) -> Bool {
        CatalogWrites.attempt(what, logger: logger, metrics: metrics, body)
    }
}

/// Catalog writes whose failure must not stop the recording itself (the file is the truth;
/// ``CatalogReconciler`` and the start-up pass rebuild the rows from it) but must never be
/// silent either: logged with what was being written, and counted in
/// `recordserver_catalog_write_failures_total`.
enum CatalogWrites {
    /// Returns whether the write succeeded.
    @discardableResult
    static func attempt(_ what: String, logger: Logger, metrics: IngestMetrics, _ body: () throws -> Void) -> Bool {
        do {
            try body()
            return true
        } catch {
            logger.error("catalog write failed; it is written again once the session has finished, and reconciled at start-up",
                         metadata: ["what": "\(what)", "error": "\(error)"])
            metrics.catalogWriteFailed()
            return false
        }
    }
}

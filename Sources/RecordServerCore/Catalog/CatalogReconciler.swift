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

    func reconcile(sessionID: String) {
        guard let recordings = read("recordings of \(sessionID)", { try catalog.recordings(sessionID: sessionID) })
        else { return }
        var samples: [String: Int64] = [:], bytes: [String: Int64] = [:]
        for var recording in recordings where recording.status != .recording && FileManager.default.fileExists(atPath: recording.path) {
            let inspection: MP4Inspection
            do {
                inspection = try MP4Inspection.inspect(path: recording.path)
            } catch {
                logger.warning("cannot read a finished recording back for the catalog", metadata: [
                    "session": "\(sessionID)", "file": "\(recording.path)", "error": "\(error.message)"])
                continue
            }
            recording.sizeBytes = Int64(inspection.fileSize)
            if inspection.durationSeconds > 0 { recording.durationSeconds = inspection.durationSeconds }
            write("recording \(recording.id)") { try catalog.upsertRecording(recording) }
            for track in inspection.tracks {
                samples[track.label, default: 0] += Int64(track.sampleCount)
                bytes[track.label, default: 0] += Int64(track.payloadBytes)
            }
        }
        guard let tracks = read("tracks of \(sessionID)", { try catalog.tracks(sessionID: sessionID) }) else { return }
        for var track in tracks {
            if let count = samples[track.label] {
                track.samples = count
                track.bytes = bytes[track.label] ?? track.bytes
            }
            if track.status == .active { track.status = .ended }
            write("track \(track.label) of \(sessionID)") { try catalog.upsertTrack(track) }
        }
    }

    private func read<T>(_ what: String, _ body: () throws -> T) -> T? {
        do { return try body() } catch {
            logger.error("catalog read failed", metadata: ["what": "\(what)", "error": "\(error)"])
            metrics.catalogWriteFailed()
            return nil
        }
    }

    private func write(_ what: String, _ body: () throws -> Void) {
        CatalogWrites.attempt(what, logger: logger, metrics: metrics, body)
    }
}

/// Catalog writes whose failure must not stop the recording itself (the file is the truth;
/// ``CatalogReconciler`` and the start-up pass rebuild the rows from it) but must never be
/// silent either: logged with what was being written, and counted in
/// `recordserver_catalog_write_failures_total`.
enum CatalogWrites {
    static func attempt(_ what: String, logger: Logger, metrics: IngestMetrics, _ body: () throws -> Void) {
        do { try body() } catch {
            logger.error("catalog write failed; the catalog is reconciled from the files when the session ends and at start-up",
                         metadata: ["what": "\(what)", "error": "\(error)"])
            metrics.catalogWriteFailed()
        }
    }
}

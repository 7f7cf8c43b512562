import Foundation

/// When finished recordings are deleted automatically. Both limits are off by default: a
/// recording system must never lose footage the operator did not ask it to lose.
///
/// - `maxAge`: a finished recording whose file was finished (`finishedAt`, else `createdAt`)
///   at least this many seconds before `now` is deleted.
/// - `maxTotalBytes`: while this server's recordings on its disk (live ones included, they
///   use the disk too) take more than this, its oldest finished recordings are deleted. A
///   file whose local copy was removed after its upload takes no room here and is not counted.
///
/// In a fleet sharing one catalog, each server applies its own policy to its own recordings
/// (``RecordingCatalog/oldestFinishedRecordings(limit:offset:)``). A deleted recording that
/// was uploaded loses its object too, at the uploader's next pass.
///
/// Recordings of a live session (`isLive(sessionID)`, which includes sessions waiting for
/// their agent to resume) are never deleted, nor are recordings still being written.
struct RetentionPolicy: Sendable, Equatable {
    /// Seconds; nil = no age limit.
    var maxAge: TimeInterval?
    /// Bytes; nil = no size limit.
    var maxTotalBytes: Int64?

    init(maxAge: TimeInterval? = nil, maxTotalBytes: Int64? = nil) {
        self.maxAge = maxAge
        self.maxTotalBytes = maxTotalBytes
    }

    /// Keeps everything.
    static let off = RetentionPolicy()

    /// Whether `apply` can delete anything at all.
    var isEnabled: Bool { maxAge != nil || maxTotalBytes != nil }

    /// Deletes what the policy says must go, oldest first: the file, then its catalog row.
    ///
    /// `now` is passed in (no clock is read here) so passes are reproducible in tests. A file
    /// that is already gone still has its row removed. With `storage`, every file path (and
    /// the session directory cleaned up after its last file) must resolve inside the data
    /// directory, or the pass stops with `.outsideDataDirectory`; without it, paths are used
    /// as the catalog recorded them (they were derived from validated ids by `StorageLayout`).
    ///
    /// - Parameter isLive: whether a session id is live (recording or awaiting resume); the
    ///   caller snapshots this from the session registry before the pass.
    /// - Returns: the deleted recordings, in deletion order, for the caller to log.
    /// - Throws: `RetentionError`; `deletedBeforeFailure` lists what was deleted before it.
    @discardableResult
    func apply(catalog: any RecordingCatalog, storage: StorageLayout? = nil, now: Date,
                      isLive: (String) -> Bool) throws(RetentionError) -> [RecordingRecord] {
        guard isEnabled else { return [] }
        var deleted: [RecordingRecord] = []
        let cutoff = maxAge.map { now.addingTimeInterval(-$0) }
        var total: Int64
        do { total = try catalog.totalRecordingBytes() } catch { throw RetentionError(.catalog(CatalogError(wrapping: error)), deletedBeforeFailure: []) }
        func overBudget() -> Bool { maxTotalBytes.map { total > $0 } ?? false }

        // Page through finished recordings oldest first. Deleted rows vanish from the query,
        // kept ones stay in front, so the next page starts after the kept ones.
        let pageSize = 256
        var kept = 0
        var touchedSessions: [String: String] = [:] // sessionID → directory of a deleted file
        while true {
            // With only a size limit, once within budget nothing further can qualify.
            if cutoff == nil && !overBudget() { break }
            let page: [RecordingRecord]
            do { page = try catalog.oldestFinishedRecordings(limit: pageSize, offset: kept) } catch {
                throw RetentionError(.catalog(CatalogError(wrapping: error)), deletedBeforeFailure: deleted)
            }
            if page.isEmpty { break }
            for recording in page {
                let expired = cutoff.map { (recording.finishedAt ?? recording.createdAt) <= $0 } ?? false
                // A file only in the bucket (its local copy removed after the upload) takes no
                // room on this disk: the size limit neither counts it nor deletes it; its age does.
                let onThisDisk: Bool
                do { onThisDisk = try catalog.upload(recordingID: recording.id)?.localRemoved != true } catch {
                    throw RetentionError(.catalog(CatalogError(wrapping: error)), deletedBeforeFailure: deleted)
                }
                guard !isLive(recording.sessionID), expired || (onThisDisk && overBudget()) else {
                    kept += 1
                    continue
                }
                do throws(RetentionError.Reason) {
                    try Self.removeFile(recording.path, storage: storage)
                    do { try catalog.deleteRecording(id: recording.id) } catch { throw .catalog(CatalogError(wrapping: error)) }
                } catch {
                    throw RetentionError(error, deletedBeforeFailure: deleted)
                }
                if onThisDisk { total -= recording.sizeBytes }
                deleted.append(recording)
                touchedSessions[recording.sessionID] = (recording.path as NSString).deletingLastPathComponent
            }
        }
        if let storage {
            try removeEmptiedSessionDirectories(touchedSessions, catalog: catalog, storage: storage, deleted: deleted)
        }
        return deleted
    }

    /// A session whose every file is gone leaves its sidecar and directories; tidy them so
    /// the data directory does not fill with empty day folders.
    private func removeEmptiedSessionDirectories(_ sessions: [String: String], catalog: any RecordingCatalog, storage: StorageLayout,
                                                 deleted: [RecordingRecord]) throws(RetentionError) {
        for (sessionID, directory) in sessions.sorted(by: { $0.key < $1.key }) {
            let remaining: [RecordingRecord]
            do { remaining = try catalog.recordings(sessionID: sessionID) } catch {
                throw RetentionError(.catalog(CatalogError(wrapping: error)), deletedBeforeFailure: deleted)
            }
            guard remaining.isEmpty else { continue }
            do { try storage.removeSessionDirectoryIfEmpty(directory, leftovers: SessionSidecar.fileNames) } catch {
                throw RetentionError(.storage(error), deletedBeforeFailure: deleted)
            }
        }
    }

    private static func removeFile(_ path: String, storage: StorageLayout?) throws(RetentionError.Reason) {
        if let storage {
            do { try storage.resolvedInsideDataDirectory(path) } catch { throw .storage(error) }
        }
        if unlink(path) != 0 {
            let code = errno
            // Already gone (removed by hand, or a previous pass failed after unlinking): fine.
            guard code == ENOENT else { throw .storage(.systemCall(operation: "unlink", path: path, errno: code)) }
        }
    }
}

/// A retention pass that stopped part way. What it deleted before the failure is listed so
/// the caller can still log every deletion.
struct RetentionError: Error, Sendable, CustomStringConvertible {
    enum Reason: Error, Sendable, Equatable {
        case catalog(CatalogError)
        case storage(StorageError)
    }

    var reason: Reason
    var deletedBeforeFailure: [RecordingRecord]

    init(_ reason: Reason, deletedBeforeFailure: [RecordingRecord]) {
        self.reason = reason
        self.deletedBeforeFailure = deletedBeforeFailure
    }

    var description: String {
        let cause: String
        switch reason {
        case .catalog(let error): cause = error.description
        case .storage(let error): cause = error.description
        }
        return "retention stopped after deleting \(deletedBeforeFailure.count) recording(s): \(cause)"
    }
}

import AdminModels
import Foundation
import Shared

/// What the catalog says about a session: its files' rows as they start and finish, its
/// tracks, and — after a write failed — everything written again from what the session knows.
extension RecordingSession {
    /// One of the session's recording files.
    struct SessionFile: Sendable {
        let index: Int
        let path: String
        var id: String
    }

    /// `<session>-0001` for the first file, as its name numbers it (`recording-0001.mp4` when
    /// segmented; issue 13, finding 5: ids used to count from 0 while file names count from 1).
    static func recordingID(_ session: SessionID, _ segment: Int) -> String {
        let number = String(segment + 1)
        return "\(session.value)-" + String(repeating: "0", count: max(0, 4 - number.count)) + number
    }

    func recordSegmentStarted(_ index: Int) {
        guard let muxer else { return }
        recordSegmentFile(index, path: muxer.configuration.path(forSegment: index), status: .recording, size: nil, error: nil)
    }

    func recordSegment(_ summary: SegmentSummary, status: RecordingStatus) {
        var record = RecordingRecord(id: Self.recordingID(id, summary.index), sessionID: id.value, agentID: agentID, segmentIndex: summary.index,
                                     path: summary.path, status: status, sizeBytes: Int64(summary.fileSize),
                                     durationSeconds: Double(summary.durationNanos) / 1e9, startSeconds: Double(summary.startNanos) / 1e9,
                                     createdAt: startedAt, finishedAt: Date())
        // A segment that closed while the session goes on is complete whatever happens later.
        if status == .recording { record.status = .completed }
        catalogWrite("recording \(record.id)") { try catalog.upsertRecording(record) }
        announceFinished(segment: summary.index, status: record.status, message: nil)
    }

    /// Publishes that a file of the session is final (`recording.finished`, `.failed` or
    /// `.recovered`, for `GET /v1/events` and the webhooks), once per file in this process:
    /// a catalog repair writing the row again announces nothing.
    func announceFinished(segment index: Int, status: RecordingStatus, message: String?) {
        guard status != .recording, announcedSegments.insert(index).inserted else { return }
        let type: ServerEvent.Kind = switch status {
        case .failed: .recordingFailed
        case .recovered: .recordingRecovered
        case .recording, .completed, .interrupted, .cancelled: .recordingFinished
        }
        events.publish(ServerEvent(type: type, agentID: agentID, sessionID: id.value, recordingID: Self.recordingID(id, index),
                                   status: status.rawValue, message: message))
    }

    func recordSegmentFile(_ index: Int, path: String, status: RecordingStatus, size: Int64?, error: String?) {
        // An unreadable row is written afresh; the write below reports its own failure.
        var record = (try? catalog.recording(id: Self.recordingID(id, index))) ?? RecordingRecord(
            id: Self.recordingID(id, index), sessionID: id.value, agentID: agentID, segmentIndex: index, path: path,
            status: status, createdAt: startedAt)
        record.status = status
        if let size { record.sizeBytes = size }
        record.error = error
        if status != .recording { record.finishedAt = Date() }
        catalogWrite("recording \(record.id)") { try catalog.upsertRecording(record) }
    }

    func persistTracks() {
        for t in tracks.values {
            let record = TrackRecord(sessionID: id.value, trackID: Int(t.trackID), label: t.label, kind: t.kind, codec: t.codec,
                                     width: t.width, height: t.height, status: t.status, samples: t.samples, bytes: t.bytes,
                                     dropped: t.dropped + t.rejected, error: t.lastError)
            catalogWrite("track \(t.label)") { try catalog.upsertTrack(record) }
        }
    }

    /// Reads the finished files back into the catalog (``CatalogReconciler``), once, after the
    /// session finished. The connection calls it after sending SessionClosed (the reply must
    /// not wait on reading files: a server killed in between would leave the agent without
    /// its answer for a session that is already finished); every other way of finishing calls
    /// it at once.
    func reconcileCatalog() {
        guard reconcilePending else { return }
        reconcilePending = false
        if !CatalogReconciler(catalog: catalog, logger: logger, metrics: metrics).reconcile(sessionID: id.value) { owesCatalog = true }
    }

    /// Writes everything the catalog should hold about this finished session again (its row,
    /// one row per file, its tracks) and reads its files back, after an earlier catalog write
    /// failed. Returns whether the catalog is right now; false means "try again later".
    func repairCatalog() -> Bool {
        guard owesCatalog else { return true }
        guard case .finished(let status, let ending) = phase else { return false }  // live: it writes as it goes
        owesCatalog = false
        switch ending {
        case .erased:
            catalogWrite("delete the empty session's rows") { try catalog.deleteSession(id: id.value) }
        case .recovered(let result?):
            writeRows(of: result)
            if !owesCatalog { logger.notice("the recovered session's catalog rows are written after an earlier failure") }
        case .recovered(nil):
            // Its rows could not be read when its window passed: recover the files now.
            recoverFiles()
        case .written:
            rewriteRows(status)
            if !owesCatalog { logger.notice("the session's catalog rows are written again after an earlier failure") }
        }
        return !owesCatalog
    }

    private func rewriteRows(_ status: RecordingStatus) {
        catalogWrite("session \(id)") {
            if try catalog.session(id: id.value) == nil {
                try catalog.insertSession(SessionRecord(id: id.value, agentID: agentID, labels: labels, status: status,
                                                        createdAt: startedAt, directory: directory))
            }
            try catalog.updateSession(id: id.value, status: status, endedAt: Date(), error: endReason,
                                      durableSequence: status == .cancelled ? 0 : members[0].acknowledged)
        }
        guard status != .cancelled else {
            catalogWrite("delete the cancelled session's recordings") {
                for recording in try catalog.recordings(sessionID: id.value) { try catalog.deleteRecording(id: recording.id) }
            }
            return
        }
        let all = filesOnDisk
        // A file that never held a durable fragment goes with its row; one that is gone
        // (a cancel's discarded file) has no row.
        for empty in all where emptySegments.contains(empty.index) { removeEmptyRecording(empty) }
        for gone in all where !FileManager.default.fileExists(atPath: gone.path) && !isInObjectStore(gone.id) {
            catalogWrite("delete recording \(gone.id)") { try catalog.deleteRecording(id: gone.id) }
        }
        let files = all.filter { !emptySegments.contains($0.index) && FileManager.default.fileExists(atPath: $0.path) }
        for file in files {
            // A segment that closed while the session went on is complete whatever happened later.
            let last = file.index == files.last?.index
            recordSegmentFile(file.index, path: file.path, status: last ? status : .completed, size: nil, error: last ? endReason : nil)
        }
        persistTracks()
        if !CatalogReconciler(catalog: catalog, logger: logger, metrics: metrics).reconcile(sessionID: id.value) { owesCatalog = true }
    }

    /// Whether the recording's file is in object storage, its local copy possibly removed by
    /// policy: its row stays (deleting it would delete the object too). Unknown counts as yes.
    private func isInObjectStore(_ recordingID: String) -> Bool {
        do { return try catalog.upload(recordingID: recordingID) != nil } catch { return true }
    }

    func catalogWrite(_ what: String, _ body: () throws -> Void) {
        if !CatalogWrites.attempt(what, logger: logger, metrics: metrics, body) { owesCatalog = true }
    }

    /// The session's recording files on disk. With its files open: those this process saw
    /// become durable, those a resume took over (``adoptFiles(through:)``), and one created
    /// whose first fragment never became durable (a full disk). Found after a restart, files
    /// closed: ``recordingRows()`` (none when the catalog cannot be read).
    var filesOnDisk: [SessionFile] {
        guard let configuration = muxer?.configuration else {
            // A catalog that cannot be read gives no files: the caller's writes then fail, are counted and retried.
            return ((try? recordingRows()) ?? []).map { SessionFile(index: $0.segmentIndex, path: $0.path, id: $0.id) }
        }
        var all = recordedSegments
        // Unsegmented, every index names the one file; segmented, a new file is at most one past the last.
        let highest = configuration.isSegmented ? (all.max() ?? -1) + 1 : 0
        for k in 0 ... highest where RandomAccessFile.exists(configuration.path(forSegment: k)) { all.insert(k) }
        return all.sorted().map { SessionFile(index: $0, path: configuration.path(forSegment: $0), id: Self.recordingID(id, $0)) }
    }

    /// The session's rows in the catalog, plus a row (status `recording`) for each recording
    /// file in its directory that the catalog does not list: the server died between creating
    /// the file and writing its row, or the row's write failed.
    func recordingRows() throws -> [RecordingRecord] {
        var all = try catalog.recordings(sessionID: id.value)
        // No directory: no unlisted files to add; the rows are all there is.
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return all }
        for name in names.sorted() where name.hasSuffix(".mp4") {
            let path = directory + "/" + name
            guard !all.contains(where: { $0.path == path }) else { continue }
            // `<base>.mp4` is the first file; `<base>-0002.mp4` the second (MuxerConfiguration.path(forSegment:)).
            let stem = name.dropLast(4)
            let number = stem.split(separator: "-").last.flatMap { $0.count == 4 ? Int($0) : nil } ?? 1
            all.append(RecordingRecord(id: Self.recordingID(id, number - 1), sessionID: id.value, agentID: agentID,
                                       segmentIndex: number - 1, path: path, status: .recording, createdAt: startedAt))
        }
        return all
    }

    /// After a server restart the session goes on in the files of the earlier process: they
    /// are its files too (a cancel deletes them, a failure finalizes them), and the current
    /// one has its catalog row even if the earlier process died before writing it.
    func adoptFiles(through index: Int) {
        recordedSegments.formUnion(0 ... index)
        recordSegmentStarted(index)
        seedTrackCounts()
    }

    /// Counters of a session that goes on after a restart or a takeover start from what it
    /// already holds: samples and bytes from its files (read back as the reconciler reads
    /// them), drops from its catalog rows, the only place they were kept. Counting from zero,
    /// every catalog write until the end (``persistTracks()``) said only what arrived since,
    /// and the rows were right only once the files were read back, after `SessionClosed`: a
    /// reader who asked when the agent was told saw a third of a taken-over recording.
    private func seedTrackCounts() {
        var samples: [String: Int64] = [:], bytes: [String: Int64] = [:]
        for file in filesOnDisk {
            do {
                for track in try MP4Inspection.inspect(path: file.path).tracks {
                    samples[track.label, default: 0] += Int64(track.sampleCount)
                    bytes[track.label, default: 0] += Int64(track.payloadBytes)
                }
            } catch {
                // The reconciler reads the files again once the session has finished.
                logger.warning("cannot read a file of the resumed session back for its track counts",
                               metadata: ["file": "\(file.path)", "error": "\(error.message)"])
            }
        }
        let dropped: [String: Int64]
        do {
            dropped = Dictionary(try catalog.tracks(sessionID: id.value).map { ($0.label, $0.dropped) }, uniquingKeysWith: +)
        } catch {
            // Drops reported before the restart go uncounted in the rows; the files are unaffected.
            logger.warning("cannot read the resumed session's tracks from the catalog", metadata: ["error": "\(error)"])
            dropped = [:]
        }
        for key in tracks.keys {
            guard let label = tracks[key]?.label else { continue }
            tracks[key]?.samples = samples[label] ?? 0
            tracks[key]?.bytes = bytes[label] ?? 0
            tracks[key]?.dropped = dropped[label] ?? 0
        }
    }
}

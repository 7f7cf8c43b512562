import Foundation
import Logging
import Shared

/// One recording session: owns its muxer, admits samples from whichever connection the
/// agent is attached through, and acknowledges only what the muxer has made durable.
/// An actor, so samples, control requests and the resume-window sweeper never race.
actor RecordingSession {
    enum Phase: Sendable, Equatable {
        case attached(connection: UInt64)
        /// The agent went away; the session waits for a resume until `deadline`.
        case detached(deadline: ContinuousClock.Instant)
        case finished(RecordingStatus)
        /// The server is shutting down: stopped without finalizing, left for the agent to
        /// resume after the restart (the catalog still says `recording`).
        case suspended
    }

    nonisolated let id: SessionID
    nonisolated let agentID: String
    nonisolated let open: SessionOpen
    nonisolated let directory: String
    nonisolated let startedAt: Date
    private let muxer: MP4Muxer
    private let catalog: any RecordingCatalog
    private let settings: SessionSettings
    private let metrics: IngestMetrics
    private var logger: Logger
    private var tracks: [UInt8: TrackStatistics]
    /// Set when the session finished and its files are not yet read back (``reconcileCatalog()``).
    private var reconcilePending = false
    /// A catalog write for this session failed (a full disk, a busy database). The recording
    /// went on regardless; once the session has finished, ``repairCatalog()`` writes what its
    /// rows should say again, and the registry retries that on every sweep until it succeeds.
    private(set) var owesCatalog = false
    /// The session ended with nothing recorded and was removed, rows included.
    private var discarded = false
    /// Why the session ended, as its catalog row says.
    private var endReason: String?
    private(set) var phase: Phase
    private(set) var acknowledged: UInt64
    private(set) var highestReceived: UInt64
    private var endedTracks: Set<UInt8> = []
    private var recordedSegments: Set<Int> = []
    /// The first sample the muxer refused (protocol.md §6.12): the ack point never passes it,
    /// and the session ends with every sample before it.
    private var refusedSequence: UInt64?
    /// The decode time of the session's first sample in this process: the reference of the
    /// session-span bound (protocol.md §4.1), handed to the validator on a resume.
    private var firstDTS: Int64?

    /// Whether the session holds any sample (received here or, after a restart, in its file).
    private var hasSamples: Bool { highestReceived > 0 }

    init(id: SessionID, agentID: String, open: SessionOpen, directory: String, startedAt: Date, muxer: MP4Muxer,
         acknowledged: UInt64, connection: UInt64, catalog: any RecordingCatalog, settings: SessionSettings,
         metrics: IngestMetrics, logger: Logger) {
        self.id = id
        self.agentID = agentID
        self.open = open
        self.directory = directory
        self.startedAt = startedAt
        self.muxer = muxer
        self.catalog = catalog
        self.settings = settings
        self.metrics = metrics
        self.acknowledged = acknowledged
        highestReceived = acknowledged
        phase = .attached(connection: connection)
        var logger = logger
        logger[metadataKey: "session"] = "\(id)"
        logger[metadataKey: "agent"] = "\(agentID)"
        self.logger = logger
        tracks = Dictionary(uniqueKeysWithValues: open.tracks.map { d in
            let k = TrackMapping.kind(d)
            return (d.id, TrackStatistics(trackID: d.id, label: d.label, kind: k.kind, codec: k.codec, width: k.width, height: k.height))
        })
    }

    /// Over in this process: finalized, cancelled, failed, or suspended for a restart.
    var isFinished: Bool {
        switch phase {
        case .finished, .suspended: true
        case .attached, .detached: false
        }
    }

    /// What the connection's validator needs to continue this session after a resume.
    var resumePoint: SessionValidator.ResumePoint {
        SessionValidator.ResumePoint(tracks: open.tracks, endedTracks: endedTracks, highestReceived: highestReceived, acknowledged: acknowledged,
                                     firstDTS: firstDTS)
    }

    // MARK: Attachment

    func attach(connection: UInt64) throws(ProtocolError) -> SessionValidator.ResumePoint {
        switch phase {
        case .attached(let other) where other != connection:
            throw ProtocolError(.sessionBusy, "session \(id) is still attached to another connection")
        case .finished:
            throw ProtocolError(.unknownSession, "session \(id) has finished")
        default:
            phase = .attached(connection: connection)
            logger.info("agent resumed the session", metadata: ["acknowledged": "\(acknowledged)"])
            return resumePoint
        }
    }

    /// The connection ended without closing the session: wait for a resume. A session that
    /// never received a sample has nothing to keep: it is discarded at once, so that a peer
    /// opening sessions and dropping the connection holds no slot, file or catalog row
    /// (protocol.md §9). Returns true when the session ended here.
    func detach(connection: UInt64, now: ContinuousClock.Instant) -> Bool {
        guard case .attached(let current) = phase, current == connection else { return false }
        guard hasSamples else {
            discardEmpty(reason: "the connection ended before the first sample")
            return true
        }
        phase = .detached(deadline: now + settings.resumeWindow)
        logger.notice("agent disconnected; waiting \(settings.resumeWindow) for a resume")
        return false
    }

    // MARK: Samples

    /// What admitting a run of samples came to.
    struct AppendOutcome: Sendable {
        /// The new ack point, when it advanced.
        var acknowledged: UInt64?
        /// The first sample that failed (its index in the run) and why; the samples after it
        /// were not looked at.
        var failure: (index: Int, error: ProtocolError)?
    }

    /// Admits a run of samples, in order, in one call (one actor hop per read cycle instead of
    /// one per sample). Stops at the first that fails.
    func append(_ samples: ArraySlice<Sample>) -> AppendOutcome {
        var outcome = AppendOutcome()
        defer { reportQueue() }
        for index in samples.indices {
            do {
                if let ack = try admit(samples[index]) { outcome.acknowledged = ack }
            } catch {
                outcome.failure = (index, error)
                break
            }
        }
        return outcome
    }

    /// Admits one sample; returns the new ack point when it advanced.
    private func admit(_ sample: Sample) throws(ProtocolError) -> UInt64? {
        guard case .attached = phase else { throw ProtocolError(.noOpenSession, "session \(id) is not open on this connection") }
        highestReceived = max(highestReceived, sample.sequence)
        if firstDTS == nil { firstDTS = sample.dts }
        guard let stats = tracks[sample.track], stats.status != .failed || !settings.failSessionOnTrackError else {
            throw ProtocolError(.unknownTrack, "track \(sample.track) is not in session \(id)")
        }
        let input = MuxerSample(trackID: TrackMapping.muxerTrackID(sample.track), sequence: sample.sequence, pts: sample.pts,
                                dts: sample.dts, duration: sample.duration, isKeyframe: sample.flags.contains(.keyframe),
                                data: Array(buffer: sample.data))
        let events: [MuxerEvent]
        do {
            events = try muxer.append(input)
        } catch {
            return try handle(error, track: sample.track, sequence: sample.sequence)
        }
        // In place: a copy of the statistics would copy their rate window on every sample.
        tracks[sample.track]?.record(pts: sample.pts, bytes: sample.data.readableBytes)
        metrics.sampleIngested(kind: stats.kind, bytes: sample.data.readableBytes)
        let advanced = try process(events)
        try endIfRefused()
        return advanced
    }

    /// Tells the metrics how this session's not-yet-durable bytes changed since last time
    /// (all of them leave the queue when the session ends, whatever its outcome).
    private func reportQueue() {
        let now = isFinished ? 0 : muxer.bufferedPayloadBytes
        guard now != reportedQueueBytes else { return }
        metrics.queueBytesChanged(by: now - reportedQueueBytes)
        reportedQueueBytes = now
    }
    private var reportedQueueBytes = 0

    func endTrack(_ end: TrackEnd) throws(ProtocolError) -> UInt64? {
        endedTracks.insert(end.track)
        let failed = end.reason == .error
        tracks[end.track]?.status = failed ? .failed : .ended
        tracks[end.track]?.lastError = failed ? end.message : nil
        logger.log(level: failed ? .warning : .info, "track \(end.track) ended", metadata: ["reason": "\(end.reason)", "message": "\(end.message)"])
        persistTracks()
        if failed, settings.failSessionOnTrackError {
            fail(.failed, "track \(end.track) failed: \(end.message)")
            throw ProtocolError(.invalidField, scope: .session, "track \(end.track) failed and this server fails the session on track errors")
        }
        let events: [MuxerEvent]
        do { events = try muxer.endTrack(TrackMapping.muxerTrackID(end.track)) } catch {
            return try handle(error, track: end.track, sequence: nil)
        }
        defer { reportQueue() }
        let advanced = try process(events)
        try endIfRefused()
        return advanced
    }

    func recordDrops(_ report: DropReport) {
        tracks[report.track]?.dropped += Int64(report.count)
        logger.warning("agent dropped samples before sending", metadata: ["track": "\(report.track)", "count": "\(report.count)", "reason": "\(report.reason)"])
        persistTracks()
    }

    // MARK: Ending

    /// The agent closed the session: finalize into a regular MP4.
    func close() throws(ProtocolError) -> UInt64 {
        guard !isFinished else { throw ProtocolError(.unknownSession, "session \(id) has finished") }
        finalize(as: .completed, reason: nil)
        guard case .finished(.completed) = phase else {
            throw ProtocolError(.storageFailure, "session \(id) could not be finalized")
        }
        return acknowledged
    }

    /// A session-scoped error ends the session it names (protocol.md §8), whoever raised it:
    /// finalized as `failed` with every durable sample, or discarded when it never received
    /// one. Returns the durable point for the `SessionClosed` that tells the agent.
    func end(after error: ProtocolError) -> UInt64 {
        if !isFinished {
            if hasSamples {
                finalize(as: .failed, reason: "\(error.code): \(error.message)")
            } else {
                discardEmpty(reason: "\(error.code): \(error.message)")
            }
        }
        if case .finished(.cancelled) = phase { return 0 }
        return acknowledged
    }

    /// Ends a session that never received a sample and removes every trace of it: its
    /// directory (with the `session.mcrp` sidecar) and its catalog rows.
    private func discardEmpty(reason: String) {
        guard !isFinished else { return }
        muxer.cancel()
        do { try FileManager.default.removeItem(atPath: directory) } catch {
            logger.warning("could not remove the empty session's directory", metadata: ["directory": "\(directory)", "error": "\(error)"])
        }
        discarded = true
        catalogWrite("delete the empty session's rows") { try catalog.deleteSession(id: id.value) }
        phase = .finished(.cancelled)
        metrics.sessionEnded(outcome: .cancelled)
        reportQueue()
        logger.notice("session ended before its first sample; nothing kept", metadata: ["reason": "\(reason)"])
    }

    /// Discard everything recorded.
    func cancel(reason: String) {
        guard !isFinished else { return }
        let files = segmentFiles
        muxer.cancel()
        for k in files {
            catalogWrite("delete recording \(k)") { try catalog.deleteRecording(id: Self.recordingID(id, k)) }
        }
        try? FileManager.default.removeItem(atPath: directory)
        phase = .finished(.cancelled)
        endReason = reason.isEmpty ? nil : reason
        catalogWrite("session status") {
            try catalog.updateSession(id: id.value, status: .cancelled, endedAt: Date(), error: endReason, durableSequence: 0)
        }
        metrics.sessionEnded(outcome: .cancelled)
        reportQueue()
        logger.notice("session cancelled; recording discarded", metadata: ["reason": "\(reason)"])
    }

    /// Graceful server shutdown: stop as a crash would, but cleanly. The file keeps every
    /// durable fragment and the catalog keeps the session as `recording`. After the restart,
    /// the server finds it unfinished and waits one resume window for the agent, which
    /// resends everything past the ack point into the same file. If the agent does not come
    /// back, the server finalizes the file by recovery. A graceful restart therefore loses
    /// no sample, as a `kill -9` does not either.
    func suspend() {
        guard !isFinished else { return }
        muxer.suspend()
        phase = .suspended
        persistTracks()
        logger.notice("session suspended for the server restart; the agent can resume it into the same file",
                      metadata: ["acknowledged": "\(acknowledged)"])
    }

    /// The resume window passed: finalize what is there.
    func expire(as status: RecordingStatus = .interrupted) {
        guard !isFinished else { return }
        finalize(as: status, reason: status == .interrupted ? "agent did not resume within \(settings.resumeWindow)" : nil)
        reconcileCatalog()
    }

    /// Finalizes the session as `interrupted` if it is still detached past its resume
    /// deadline. One actor turn checks and acts, so a resume cannot slip in between.
    /// Returns whether the session is over (for whatever reason).
    func expireIfAbandoned(_ now: ContinuousClock.Instant) -> Bool {
        if case .detached(let deadline) = phase, now >= deadline { expire() }
        return isFinished
    }

    // MARK: Introspection

    func snapshot() -> LiveSessionInfo {
        let state: String
        switch phase {
        case .attached: state = "recording"
        case .detached: state = "detached"
        case .finished(let s): state = s.rawValue
        case .suspended: state = "suspended"
        }
        let newest = tracks.values.compactMap(\.lastPTS).max() ?? 0
        let live = tracks.values.sorted { $0.trackID < $1.trackID }.map { t in
            let rates = t.rates
            return LiveTrackInfo(trackID: Int(t.trackID), label: t.label, kind: t.kind, codec: t.codec, status: t.status,
                                 samples: t.samples, bytes: t.bytes, dropped: t.dropped + t.rejected, fps: rates.fps,
                                 bitrate: rates.bitrate, lagSeconds: t.lastPTS.map { Double(newest - $0) / 1e9 } ?? 0,
                                 error: t.lastError)
        }
        return LiveSessionInfo(id: id.value, agentID: agentID, labels: Dictionary(open.labels.map { ($0.key.value, $0.value) }, uniquingKeysWith: { a, _ in a }),
                               state: state, startedAt: startedAt, path: muxer.configuration.path(forSegment: 0),
                               lastAck: acknowledged, tracks: live)
    }

    // MARK: Internals

    /// `<session>-0001` for the first file, as its name numbers it (`recording-0001.mp4` when
    /// segmented; issue 13, finding 5: ids used to count from 0 while file names count from 1).
    static func recordingID(_ session: SessionID, _ segment: Int) -> String {
        let number = String(segment + 1)
        return "\(session.value)-" + String(repeating: "0", count: max(0, 4 - number.count)) + number
    }

    private func process(_ events: [MuxerEvent]) throws(ProtocolError) -> UInt64? {
        var advanced: UInt64?
        for event in events {
            switch event {
            case .fragmentDurable(let report):
                metrics.fragmentWritten(bytes: report.byteCount, write: report.writeDuration, sync: report.syncDuration)
                let durable = min(report.durableThroughSequence, refusedSequence.map { $0 - 1 } ?? .max)
                if durable > acknowledged {
                    acknowledged = durable
                    advanced = acknowledged
                }
                if recordedSegments.insert(report.segmentIndex).inserted { recordSegmentStarted(report.segmentIndex) }
            case .segmentCompleted(let summary):
                recordSegment(summary, status: .completed)
            case .trackStalled(let trackID):
                logger.warning("track stalled: interleaving continues without it", metadata: ["track": "\(TrackMapping.wireTrackID(trackID))"])
            case .trackResumed(let trackID):
                logger.info("stalled track delivers again", metadata: ["track": "\(TrackMapping.wireTrackID(trackID))"])
            case .sampleRejected(let trackID, let sequence, let reason):
                // Refused after interleaving (it predates the file's time origin): the sample
                // is not in the file, so the ack point must stay below it.
                let track = TrackMapping.wireTrackID(trackID)
                tracks[track]?.rejected += 1
                tracks[track]?.lastError = reason
                refuse(sequence, track: track, reason: reason)
            case .duplicateIgnored:
                metrics.duplicateIgnored()
            }
        }
        return advanced
    }

    /// A muxer error: bad sample content ends the session before that sample (protocol.md
    /// §6.12 `sampleRefused`); a storage error fails the session and keeps what is durable.
    private func handle(_ error: MuxerError, track: UInt8, sequence: UInt64?) throws(ProtocolError) -> UInt64? {
        switch error.code {
        case .io:
            fail(.failed, error.message)
            metrics.error(code: ProtocolError.Code.storageFailure)
            throw ProtocolError(.storageFailure, scope: .session, "storage failed: \(error.message); what was acknowledged is kept")
        case .notRunning:
            throw ProtocolError(.noOpenSession, scope: .session, "session \(id) is no longer recording")
        default:
            let reason = TrackMapping.describe(error)
            tracks[track]?.rejected += 1
            tracks[track]?.lastError = reason
            guard let sequence else {
                fail(.failed, "track \(track): \(reason)")
                throw ProtocolError(.invalidField, scope: .session, "track \(track): \(reason)")
            }
            refuse(sequence, track: track, reason: reason)
            try endIfRefused()
            return nil
        }
    }

    /// Remembers the first refused sample; ``endIfRefused()`` then ends the session.
    private func refuse(_ sequence: UInt64, track: UInt8, reason: String) {
        logger.warning("sample refused; the session ends before it", metadata: [
            "track": "\(track)", "sequence": "\(sequence)", "reason": "\(reason)"])
        guard refusedSequence.map({ sequence < $0 }) ?? true else { return }
        refusedSequence = sequence
        refusal = reason.contains("sequence \(sequence)") ? reason : "track \(track) sequence \(sequence): \(reason)"
    }
    private var refusal = ""

    /// A refused sample ends the session: everything before it is finalized into the file,
    /// the ack point stays below it, and the agent is told with `sampleRefused`.
    private func endIfRefused() throws(ProtocolError) {
        guard let refused = refusedSequence else { return }
        if !isFinished { finalize(as: .failed, reason: "\(ProtocolError.Code.sampleRefused): \(refusal)") }
        acknowledged = min(acknowledged, refused - 1)
        throw ProtocolError(.sampleRefused, scope: .session,
                            "\(refusal); the session ended: samples 1...\(acknowledged) are stored, none after")
    }

    private func fail(_ status: RecordingStatus, _ reason: String) {
        guard !isFinished else { return }
        if muxer.status == .running {
            finalize(as: status, reason: reason)
        } else {
            // The muxer stopped on an I/O error: the file is fragmented but every durable
            // fragment is intact. Try to finalize it now; if that fails too, recovery can later.
            let files = segmentFiles
            for k in files {
                let path = muxer.configuration.path(forSegment: k)
                // A segment that closed while the session went on is complete whatever happened later.
                let last = k == files.last
                let fileStatus = last ? status : .completed
                do {
                    let report = try MP4Recovery.recover(path: path)
                    recordSegmentFile(k, path: path, status: fileStatus, size: Int64(report.fileSize), error: last ? reason : nil)
                } catch where error.code == .noCompleteFragment {
                    // Nothing of it ever became durable: no media, nothing acknowledged. It goes.
                    RandomAccessFile.remove(path)
                    catalogWrite("delete empty recording \(k)") { try catalog.deleteRecording(id: Self.recordingID(id, k)) }
                } catch {
                    recordSegmentFile(k, path: path, status: fileStatus, size: nil, error: reason + " (file left fragmented; run recordctl recover)")
                }
            }
            phase = .finished(status)
            endReason = reason
            catalogWrite("session status") {
                try catalog.updateSession(id: id.value, status: status, endedAt: Date(), error: reason, durableSequence: acknowledged)
            }
            persistTracks()
            reconcilePending = true
            metrics.sessionEnded(outcome: status)
            reportQueue()
            logger.error("session failed", metadata: ["error": "\(reason)"])
        }
    }

    private func finalize(as status: RecordingStatus, reason: String?) {
        do {
            let summary = try muxer.finish()
            _ = try? process(summary.events.filter { if case .segmentCompleted = $0 { false } else { true } })
            acknowledged = max(acknowledged, min(muxer.durableThroughSequence, refusedSequence.map { $0 - 1 } ?? .max))
            for segment in summary.segments { recordSegment(segment, status: status) }
            phase = .finished(status)
            endReason = reason
            catalogWrite("session status") {
                try catalog.updateSession(id: id.value, status: status, endedAt: Date(), error: reason, durableSequence: acknowledged)
            }
            persistTracks()
            reconcilePending = true
            metrics.sessionEnded(outcome: status)
            reportQueue()
            logger.notice("session finalized", metadata: ["status": "\(status.rawValue)", "files": "\(summary.segments.map(\.path))"])
        } catch {
            fail(.failed, "finalize failed: \(error.message)")
        }
    }

    private func recordSegmentStarted(_ index: Int) {
        recordSegmentFile(index, path: muxer.configuration.path(forSegment: index), status: .recording, size: nil, error: nil)
    }

    private func recordSegment(_ summary: SegmentSummary, status: RecordingStatus) {
        var record = RecordingRecord(id: Self.recordingID(id, summary.index), sessionID: id.value, agentID: agentID, segmentIndex: summary.index,
                                     path: summary.path, status: status, sizeBytes: Int64(summary.fileSize),
                                     durationSeconds: Double(summary.durationNanos) / 1e9, startSeconds: Double(summary.startNanos) / 1e9,
                                     createdAt: startedAt, finishedAt: Date())
        // A segment that closed while the session goes on is complete whatever happens later.
        if status == .recording { record.status = .completed }
        catalogWrite("recording \(record.id)") { try catalog.upsertRecording(record) }
    }

    private func recordSegmentFile(_ index: Int, path: String, status: RecordingStatus, size: Int64?, error: String?) {
        var record = (try? catalog.recording(id: Self.recordingID(id, index))) ?? RecordingRecord(
            id: Self.recordingID(id, index), sessionID: id.value, agentID: agentID, segmentIndex: index, path: path,
            status: status, createdAt: startedAt)
        record.status = status
        if let size { record.sizeBytes = size }
        record.error = error
        if status != .recording { record.finishedAt = Date() }
        catalogWrite("recording \(record.id)") { try catalog.upsertRecording(record) }
    }

    private func persistTracks() {
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
        guard case .finished(let status) = phase else { return false }  // live: it writes as it goes
        owesCatalog = false
        if discarded {
            catalogWrite("delete the empty session's rows") { try catalog.deleteSession(id: id.value) }
            return !owesCatalog
        }
        let labels = Dictionary(open.labels.map { ($0.key.value, $0.value) }, uniquingKeysWith: { a, _ in a })
        catalogWrite("session \(id)") {
            if try catalog.session(id: id.value) == nil {
                try catalog.insertSession(SessionRecord(id: id.value, agentID: agentID, labels: labels, status: status,
                                                        createdAt: startedAt, directory: directory))
            }
            try catalog.updateSession(id: id.value, status: status, endedAt: Date(), error: endReason,
                                      durableSequence: status == .cancelled ? 0 : acknowledged)
        }
        let files = Set(segmentFiles).union(recordedSegments).sorted()
        let last = files.last
        for k in files {
            let path = muxer.configuration.path(forSegment: k)
            guard status != .cancelled, FileManager.default.fileExists(atPath: path) else {
                catalogWrite("delete recording \(k)") { try catalog.deleteRecording(id: Self.recordingID(id, k)) }
                continue
            }
            // A segment that closed while the session went on is complete whatever happened later.
            recordSegmentFile(k, path: path, status: k == last ? status : .completed, size: nil, error: k == last ? endReason : nil)
        }
        guard status != .cancelled else { return !owesCatalog }
        persistTracks()
        if !CatalogReconciler(catalog: catalog, logger: logger, metrics: metrics).reconcile(sessionID: id.value) { owesCatalog = true }
        if !owesCatalog { logger.notice("the session's catalog rows are written again after an earlier failure") }
        return !owesCatalog
    }

    private func catalogWrite(_ what: String, _ body: () throws -> Void) {
        if !CatalogWrites.attempt(what, logger: logger, metrics: metrics, body) { owesCatalog = true }
    }

    /// Indexes of the session's files on disk: those this process saw become durable, those
    /// a resume took over (``adoptFiles(through:)``), and one created whose first fragment
    /// never became durable (a full disk).
    private var segmentFiles: [Int] {
        var all = recordedSegments
        // Unsegmented, every index names the one file; segmented, a new file is at most one past the last.
        let highest = muxer.configuration.isSegmented ? (all.max() ?? -1) + 1 : 0
        for k in 0 ... highest where RandomAccessFile.exists(muxer.configuration.path(forSegment: k)) { all.insert(k) }
        return all.sorted()
    }

    /// After a server restart the session goes on in the files of the earlier process: they
    /// are its files too (a cancel deletes them, a failure finalizes them), and the current
    /// one has its catalog row even if the earlier process died before writing it.
    func adoptFiles(through index: Int) {
        recordedSegments.formUnion(0 ... index)
        recordSegmentStarted(index)
    }
}

extension Error {
    var message: String { (self as? MuxerError)?.message ?? String(describing: self) }
}

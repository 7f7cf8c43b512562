import Foundation
import Logging
import Shared

/// One recording session, from its `SessionOpen` (or from the catalog, when a restarted
/// server finds it unfinished) to its end: owns its muxer, admits samples from whichever
/// connection the agent is attached through, acknowledges only what the muxer has made
/// durable, and is the one place that finishes a recording — finalized, interrupted, failed,
/// cancelled, discarded, suspended for a restart, or recovered after one — and writes what
/// its files hold into the catalog.
/// An actor, so samples, control requests and the resume-window sweeper never race: each
/// way of finishing checks the phase and acts in one turn.
actor RecordingSession {
    enum Phase: Sendable, Equatable {
        case attached(connection: UInt64)
        /// The agent went away; the session waits for a resume until `deadline`.
        case detached(deadline: ContinuousClock.Instant)
        /// Found unfinished after a server restart: its files are closed (no muxer yet); the
        /// agent may resume it until `deadline`, after which recovery finalizes its files.
        case dormant(deadline: ContinuousClock.Instant)
        case finished(RecordingStatus, Ending)
        /// The server is shutting down: stopped without finalizing, left for the agent to
        /// resume after the restart (the catalog still says `recording`).
        case suspended
    }

    /// How a finished session left its files; it decides how the catalog rows are written
    /// again after a failed write (``repairCatalog()``).
    enum Ending: Sendable, Equatable {
        /// As the session wrote (or deleted) them: it knows what they hold.
        case written
        /// Finalized by recovery (a session found after a restart and not resumed), with what
        /// recovery did to each file; nil while its rows could not be read, so its files are
        /// not recovered yet.
        case recovered(RecoveryResult?)
        /// It never held a sample and left nothing: no file, no directory, no rows.
        case erased
    }

    nonisolated let id: SessionID
    nonisolated let agentID: String
    nonisolated let directory: String
    nonisolated let startedAt: Date
    nonisolated let labels: [String: String]
    /// What the agent opened the session with; nil while dormant (read from the sidecar when
    /// the agent resumes it).
    private(set) var open: SessionOpen?
    /// The session's files while they are open; nil while dormant.
    var muxer: MP4Muxer?
    let catalog: any RecordingCatalog
    /// Where the session says that a file of it is final (``announceFinished(segment:status:message:)``).
    let events: EventBroadcaster
    /// The files announced final in this process, so that each is announced once.
    var announcedSegments: Set<Int> = []
    var settings: SessionSettings
    let metrics: IngestMetrics
    var logger: Logger
    var tracks: [UInt8: TrackStatistics] = [:]
    /// Set when the session finished and its files are not yet read back (``reconcileCatalog()``).
    var reconcilePending = false
    /// A catalog write for this session failed (a full disk, a busy database). The recording
    /// went on regardless; once the session has finished, ``repairCatalog()`` writes what its
    /// rows should say again, and the registry retries that on every sweep until it succeeds.
    var owesCatalog = false
    /// Why the session ended, as its catalog row says.
    var endReason: String?
    var phase: Phase
    private(set) var acknowledged: UInt64
    private(set) var highestReceived: UInt64
    private var endedTracks: Set<UInt8> = []
    var recordedSegments: Set<Int> = []
    /// Files found without one durable fragment when the session failed: each goes once its
    /// row is gone (``removeEmptyRecording(_:)``); until then a catalog repair deletes them.
    var emptySegments: Set<Int> = []
    /// The first sample the muxer refused (protocol.md §6.12): the ack point never passes it,
    /// and the session ends with every sample before it.
    private var refusedSequence: UInt64?
    private var refusal = ""
    /// The decode time of the session's first sample in this process: the reference of the
    /// session-span bound (protocol.md §4.1), handed to the validator on a resume.
    private var firstDTS: Int64?
    /// The base name of the session's files, for reopening them after a restart.
    private let baseName: String
    private var reportedQueueBytes = 0

    /// Whether the session holds any sample (received here or, after a restart, in its file).
    var hasSamples: Bool { highestReceived > 0 }

    /// A session its agent has just opened, recording into `muxer`.
    init(id: SessionID, agentID: String, open: SessionOpen, directory: String, startedAt: Date, muxer: MP4Muxer,
         connection: UInt64, catalog: any RecordingCatalog, events: EventBroadcaster, settings: SessionSettings, metrics: IngestMetrics,
         logger: Logger) {
        self.init(id: id, agentID: agentID, labels: Self.labels(of: open), directory: directory, baseName: muxer.configuration.baseName,
                  startedAt: startedAt, phase: .attached(connection: connection), open: open, muxer: muxer, catalog: catalog,
                  events: events, settings: settings, metrics: metrics, logger: logger)
    }

    /// A session the catalog lists as unfinished after a server restart: it waits for its
    /// agent until `deadline` (``attach(connection:)`` reopens its files), or is finalized by
    /// recovery (``expire(as:)``).
    init(foundAfterRestart record: SessionRecord, id: SessionID, baseName: String, deadline: ContinuousClock.Instant,
         catalog: any RecordingCatalog, events: EventBroadcaster, settings: SessionSettings, metrics: IngestMetrics, logger: Logger) {
        self.init(id: id, agentID: record.agentID, labels: record.labels, directory: record.directory, baseName: baseName,
                  startedAt: record.createdAt, phase: .dormant(deadline: deadline), open: nil, muxer: nil, catalog: catalog,
                  events: events, settings: settings, metrics: metrics, logger: logger)
    }

    private init(id: SessionID, agentID: String, labels: [String: String], directory: String, baseName: String, startedAt: Date,
                 phase: Phase, open: SessionOpen?, muxer: MP4Muxer?, catalog: any RecordingCatalog, events: EventBroadcaster,
                 settings: SessionSettings, metrics: IngestMetrics, logger: Logger) {
        self.id = id
        self.agentID = agentID
        self.labels = labels
        self.directory = directory
        self.baseName = baseName
        self.startedAt = startedAt
        self.phase = phase
        self.open = open
        self.muxer = muxer
        tracks = open.map(Self.statistics) ?? [:]
        self.catalog = catalog
        self.events = events
        self.settings = settings
        self.metrics = metrics
        acknowledged = 0
        highestReceived = 0
        var logger = logger
        logger[metadataKey: "session"] = "\(id)"
        logger[metadataKey: "agent"] = "\(agentID)"
        self.logger = logger
    }

    static func labels(of open: SessionOpen) -> [String: String] {
        Dictionary(open.labels.map { ($0.key.value, $0.value) }, uniquingKeysWith: { a, _ in a })
    }

    private static func statistics(for open: SessionOpen) -> [UInt8: TrackStatistics] {
        Dictionary(uniqueKeysWithValues: open.tracks.map { d in
            let k = TrackMapping.kind(d)
            return (d.id, TrackStatistics(trackID: d.id, label: d.label, kind: k.kind, codec: k.codec, width: k.width, height: k.height))
        })
    }

    /// Over in this process: finalized, cancelled, failed, or suspended for a restart.
    var isFinished: Bool {
        switch phase {
        case .finished, .suspended: true
        case .attached, .detached, .dormant: false
        }
    }

    /// What the connection's validator needs to continue this session after a resume.
    var resumePoint: SessionValidator.ResumePoint {
        SessionValidator.ResumePoint(tracks: open?.tracks ?? [], endedTracks: endedTracks, highestReceived: highestReceived,
                                     acknowledged: acknowledged, firstDTS: firstDTS)
    }

    // MARK: Attachment

    /// The agent resumes the session on `connection`. A session found after a restart
    /// reopens its files first, with the settings it was started with.
    func attach(connection: UInt64) throws(ProtocolError) -> SessionValidator.ResumePoint {
        switch phase {
        case .attached(let other) where other != connection:
            throw ProtocolError(.sessionBusy, "session \(id) is still attached to another connection")
        case .finished, .suspended:
            throw ProtocolError(.unknownSession, "session \(id) has finished")
        case .dormant:
            try reopenFiles()
            phase = .attached(connection: connection)
            return resumePoint
        case .attached, .detached:
            phase = .attached(connection: connection)
            logger.info("agent resumed the session", metadata: ["acknowledged": "\(acknowledged)"])
            return resumePoint
        }
    }

    /// Reopens a dormant session's files: the last one continues after its last durable
    /// fragment (a torn tail is cut), the ack point is what the files hold.
    private func reopenFiles() throws(ProtocolError) {
        let open: SessionOpen
        let reopened: MP4Muxer
        let report: MP4Muxer.ResumeReport
        do {
            open = try SessionSidecar.readOpen(directory: directory)
            // The session goes on with the settings it was started with.
            if let pinned = try SessionSidecar.readPinnedSettings(directory: directory) { settings = settings.applying(pinned) }
            var configs: [TrackConfiguration] = []
            for d in open.tracks { configs.append(try TrackMapping.configuration(d)) }
            (reopened, report) = try MP4Muxer.resume(configuration: settings.muxerConfiguration(
                tracks: configs, directory: directory, baseName: baseName, creationTime: Int64(startedAt.timeIntervalSince1970)))
        } catch {
            throw ProtocolError(.storageFailure, "cannot reopen session \(id) after the restart: \(error.message)")
        }
        self.open = open
        muxer = reopened
        tracks = Self.statistics(for: open)
        acknowledged = report.durableThroughSequence
        highestReceived = report.durableThroughSequence
        adoptFiles(through: report.segmentIndex)
        logger.notice("session resumed after a server restart", metadata: [
            "file": "\(report.path)", "samples_in_file": "\(report.samplesInFile)",
            "acknowledged": "\(report.durableThroughSequence)", "torn_bytes_discarded": "\(report.bytesDiscarded)"])
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
        /// Fragments were written and wait for their fsync: the caller runs ``syncWritten()``
        /// where it may block, and acknowledges what that makes durable.
        var syncDue = false
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
        outcome.syncDue = syncIsDue
        return outcome
    }

    /// The muxer writes fragments as they close and leaves their fsync to the session (the
    /// server's default durability, `.fsyncWhenAsked`), so that the connection, which reads
    /// on an event loop shared with other agents, can run the fsync on a storage thread.
    private var syncIsDue: Bool {
        guard !isFinished, let muxer, muxer.status == .running else { return false }
        return muxer.hasUnsyncedFragments
    }

    /// Makes the written fragments durable (fsync; files split off are finalized) and returns
    /// the ack point that brings, or the session-scoped error a storage failure ends the
    /// session with. May block on the disk: the connection calls it on a storage thread.
    func syncWritten() -> Result<UInt64?, ProtocolError> {
        defer { reportQueue() }
        do throws(ProtocolError) {
            return .success(try syncIfDue())
        } catch {
            return .failure(error)
        }
    }

    /// ``syncWritten()`` for callers already off the event loop (a track's end).
    private func syncIfDue() throws(ProtocolError) -> UInt64? {
        guard syncIsDue, let muxer else { return nil }
        let events: [MuxerEvent]
        do { events = try muxer.syncWrittenFragments() } catch { throw storageFailed(error) }
        let advanced = try process(events)
        try endIfRefused()
        return advanced
    }

    /// Admits one sample; returns the new ack point when it advanced.
    private func admit(_ sample: Sample) throws(ProtocolError) -> UInt64? {
        guard case .attached = phase, let muxer else { throw ProtocolError(.noOpenSession, "session \(id) is not open on this connection") }
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
    func reportQueue() {
        let now = isFinished ? 0 : muxer?.bufferedPayloadBytes ?? 0
        guard now != reportedQueueBytes else { return }
        metrics.queueBytesChanged(by: now - reportedQueueBytes)
        reportedQueueBytes = now
    }

    func endTrack(_ end: TrackEnd) throws(ProtocolError) -> UInt64? {
        guard let muxer else { throw ProtocolError(.noOpenSession, "session \(id) is not open on this connection") }
        endedTracks.insert(end.track)
        let failed = end.reason == .error
        tracks[end.track]?.status = failed ? .failed : .ended
        tracks[end.track]?.lastError = failed ? end.message : nil
        logger.log(level: failed ? .warning : .info, "track \(end.track) ended", metadata: ["reason": "\(end.reason)", "message": "\(end.message)"])
        persistTracks()
        if failed, settings.failSessionOnTrackError {
            fail(.failed, "track \(end.track) failed: \(end.message)")
            throw ProtocolError(.trackFailed, scope: .session, "track \(end.track) failed (\(end.message)) and this server fails the session on track errors")
        }
        let events: [MuxerEvent]
        do { events = try muxer.endTrack(TrackMapping.muxerTrackID(end.track)) } catch {
            return try handle(error, track: end.track, sequence: nil)
        }
        defer { reportQueue() }
        let advanced = try process(events)
        try endIfRefused()
        // Runs off the event loop (the connection handles control messages on storage threads).
        return try syncIfDue() ?? advanced
    }

    func recordDrops(_ report: DropReport) {
        tracks[report.track]?.dropped += Int64(report.count)
        logger.warning("agent dropped samples before sending", metadata: ["track": "\(report.track)", "count": "\(report.count)", "reason": "\(report.reason)"])
        persistTracks()
    }

    /// Handles what the muxer reports; returns the new ack point when it advanced.
    func process(_ events: [MuxerEvent]) throws(ProtocolError) -> UInt64? {
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
            throw storageFailed(error)
        case .notRunning:
            throw ProtocolError(.noOpenSession, scope: .session, "session \(id) is no longer recording")
        default:
            let reason = TrackMapping.describe(error)
            tracks[track]?.rejected += 1
            tracks[track]?.lastError = reason
            guard let sequence else {
                fail(.failed, "track \(track): \(reason)")
                throw ProtocolError(.trackFailed, scope: .session, "track \(track): \(reason)")
            }
            refuse(sequence, track: track, reason: reason)
            try endIfRefused()
            return nil
        }
    }

    /// A write, fsync or finalization failed: the session fails and keeps what is durable.
    private func storageFailed(_ error: MuxerError) -> ProtocolError {
        fail(.failed, error.message)
        metrics.error(code: ProtocolError.Code.storageFailure)
        return ProtocolError(.storageFailure, scope: .session, "storage failed: \(error.message); what was acknowledged is kept")
    }

    /// Remembers the first refused sample; ``endIfRefused()`` then ends the session.
    private func refuse(_ sequence: UInt64, track: UInt8, reason: String) {
        logger.warning("sample refused; the session ends before it", metadata: [
            "track": "\(track)", "sequence": "\(sequence)", "reason": "\(reason)"])
        guard refusedSequence.map({ sequence < $0 }) ?? true else { return }
        refusedSequence = sequence
        refusal = reason.contains("sequence \(sequence)") ? reason : "track \(track) sequence \(sequence): \(reason)"
    }

    /// A refused sample ends the session: everything before it is finalized into the file,
    /// the ack point stays below it, and the agent is told with `sampleRefused`.
    private func endIfRefused() throws(ProtocolError) {
        guard let refused = refusedSequence else { return }
        if !isFinished { finalize(as: .failed, reason: "\(ProtocolError.Code.sampleRefused): \(refusal)") }
        acknowledged = min(acknowledged, refused - 1)
        throw ProtocolError(.sampleRefused, scope: .session,
                            "\(refusal); the session ended: samples 1...\(acknowledged) are stored, none after")
    }

    /// The highest sample the files hold once the muxer finished, never past a refused one.
    func settleAcknowledged(durableThrough durable: UInt64) {
        acknowledged = max(acknowledged, min(durable, refusedSequence.map { $0 - 1 } ?? .max))
    }

    // MARK: Introspection

    /// The session's outcome once it has one (`completed`, `failed`, …): what `session.ended` says.
    var outcome: String? {
        guard case .finished(let status, _) = phase else { return nil }
        return status.rawValue
    }

    func snapshot() -> LiveSessionInfo {
        let state: String
        switch phase {
        case .attached: state = "recording"
        case .detached: state = "detached"
        // Ended, its file being finished and the catalog told: what the API documents as
        // `finalizing` (the outcome itself is the recording's status once it is gone from here).
        case .finished: state = "finalizing"
        case .suspended, .dormant: state = "suspended"
        }
        guard case .dormant = phase else {
            let newest = tracks.values.compactMap(\.lastPTS).max() ?? 0
            let live = tracks.values.sorted { $0.trackID < $1.trackID }.map { t in
                let rates = t.rates
                return LiveTrackInfo(trackID: Int(t.trackID), label: t.label, kind: t.kind, codec: t.codec, status: t.status,
                                     samples: t.samples, bytes: t.bytes, dropped: t.dropped + t.rejected, fps: rates.fps,
                                     bitrate: rates.bitrate, lagSeconds: t.lastPTS.map { Double(newest - $0) / 1e9 } ?? 0,
                                     error: t.lastError)
            }
            return LiveSessionInfo(id: id.value, agentID: agentID, labels: labels, state: state, startedAt: startedAt,
                                   path: muxer?.configuration.path(forSegment: 0) ?? directory, lastAck: acknowledged, tracks: live)
        }
        // Waiting after a restart, files closed: what the catalog knows.
        let recordings = (try? catalog.recordings(sessionID: id.value)) ?? []
        let path = recordings.last { $0.status == .recording }?.path ?? recordings.last?.path ?? directory
        let tracks = ((try? catalog.tracks(sessionID: id.value)) ?? []).map { t in
            LiveTrackInfo(trackID: t.trackID, label: t.label, kind: t.kind, codec: t.codec, status: t.status, samples: t.samples,
                          bytes: t.bytes, dropped: t.dropped, fps: 0, bitrate: 0, lagSeconds: 0, error: t.error)
        }
        return LiveSessionInfo(id: id.value, agentID: agentID, labels: labels, state: state, startedAt: startedAt,
                               path: path, lastAck: 0, tracks: tracks)
    }
}

extension Error {
    var message: String { (self as? MuxerError)?.message ?? String(describing: self) }
}

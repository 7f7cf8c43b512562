import Foundation
import Logging
import Shared

/// One recording session, from its `SessionOpen` (or from the catalog, when a restarted
/// server finds it unfinished) to its end: owns its muxer, admits samples from whichever
/// connection each of its agents (its ``SessionMember``s: one, or one per host of a session
/// across agents) is attached through, acknowledges to each only what the muxer has made
/// durable, and is the one place that finishes a recording — finalized, interrupted, failed,
/// cancelled, discarded, suspended for a restart, or recovered after one — and writes what
/// its files hold into the catalog.
/// An actor, so samples, control requests and the resume-window sweeper never race: each
/// way of finishing checks the phase and acts in one turn.
actor RecordingSession {
    enum Phase: Sendable, Equatable {
        /// Its files are open; each member is attached, detached or gone (``SessionMember/Attachment``).
        case recording
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
    /// The first member's agent: the one a session of one agent belongs to (the catalog's owner).
    nonisolated let agentID: String
    /// Every member's agent and the id it opened its part with, in lane order.
    nonisolated let memberIDs: [(agentID: String, wireID: SessionID)]
    nonisolated let directory: String
    nonisolated let startedAt: Date
    nonisolated let labels: [String: String]
    /// The session's tracks and labels: its agent's `SessionOpen`, or for a session across
    /// agents all members' tracks renumbered; nil while dormant (read from the sidecar when an
    /// agent resumes it).
    private(set) var open: SessionOpen?
    /// Its agents' parts, by lane.
    var members: [SessionMember]
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
    var recordedSegments: Set<Int> = []
    /// Files found without one durable fragment when the session failed: each goes once its
    /// row is gone (``removeEmptyRecording(_:)``); until then a catalog repair deletes them.
    var emptySegments: Set<Int> = []
    /// What of the session is in object storage (``LiveShipper``); nil without an object store.
    var shipping: ShippingLedger?
    /// Whether the ``LiveShipper`` follows it: a finished session stays until shipped.
    nonisolated var shipsLive: Bool { shippingEpoch != nil }
    /// Its epoch in the catalog when it ships live (``ShippingLedger/epoch``).
    nonisolated let shippingEpoch: Int?
    /// The base name of the session's files, for reopening them after a restart.
    private let baseName: String
    private var reportedQueueBytes = 0

    /// The first member's ack point: a session of one agent's.
    var acknowledged: UInt64 { members[0].acknowledged }

    /// Whether the session holds any sample (received here or, after a restart, in its file).
    var hasSamples: Bool { members.contains { $0.highestReceived > 0 } }

    /// Whether its agents share one session (``SessionMember``): their times are mapped onto
    /// the server's clock, and one member's end is not the session's.
    nonisolated var isAcrossAgents: Bool { memberIDs.count > 1 }

    /// A session its agent has just opened, recording into `muxer`.
    init(id: SessionID, agentID: String, open: SessionOpen, directory: String, startedAt: Date, muxer: MP4Muxer,
                     connection: UInt64, catalog: any RecordingCatalog, events: EventBroadcaster, settings: SessionSettings,
                     metrics: IngestMetrics, logger: Logger, shippingEpoch: Int? = nil) {
        let member = SessionMember(agentID: agentID, wireID: id, lane: 0, open: open,
                                   sessionTracks: Dictionary(uniqueKeysWithValues: open.tracks.map { ($0.id, $0.id) }),
                                   attachment: .attached(connection: connection))
        self.init(id: id, members: [member], open: open, labels: Self.labels(of: open), directory: directory, baseName: muxer.configuration.baseName,
                  startedAt: startedAt, phase: .recording, muxer: muxer, catalog: catalog,
                  events: events, settings: settings, metrics: metrics, logger: logger, shippingEpoch: shippingEpoch)
    }

    /// A session across agents, formed once every member opened its part (``SessionGroup``):
    /// `open` holds all their tracks under the session's track ids.
    init(id: SessionID, members: [SessionMember], open: SessionOpen, directory: String, startedAt: Date, muxer: MP4Muxer,
                     catalog: any RecordingCatalog, events: EventBroadcaster, settings: SessionSettings, metrics: IngestMetrics,
                     logger: Logger, shippingEpoch: Int? = nil) {
        self.init(id: id, members: members, open: open, labels: Self.labels(of: open), directory: directory,
                  baseName: muxer.configuration.baseName, startedAt: startedAt, phase: .recording, muxer: muxer, catalog: catalog,
                  events: events, settings: settings, metrics: metrics, logger: logger, shippingEpoch: shippingEpoch)
    }

    /// A session the catalog lists as unfinished after a server restart: it waits for its
    /// agent until `deadline` (``attach(lane:connection:)`` reopens its files), or is finalized by
    /// recovery (``expire(as:)``).
    /// `members`: a session across agents' (from its sidecar), nil for a session of one agent.
    init(foundAfterRestart record: SessionRecord, id: SessionID, members: [SessionMember]?, baseName: String, deadline: ContinuousClock.Instant,
                     catalog: any RecordingCatalog, events: EventBroadcaster, settings: SessionSettings, metrics: IngestMetrics, logger: Logger,
                     shippingEpoch: Int? = nil) {
        let member = SessionMember(agentID: record.agentID, wireID: id, lane: 0, open: nil, sessionTracks: [:], attachment: .left)
        self.init(id: id, members: members ?? [member], open: nil, labels: record.labels, directory: record.directory, baseName: baseName,
                  startedAt: record.createdAt, phase: .dormant(deadline: deadline), muxer: nil, catalog: catalog,
                  events: events, settings: settings, metrics: metrics, logger: logger, shippingEpoch: shippingEpoch)
    }

    private init(id: SessionID, members: [SessionMember], open: SessionOpen?, labels: [String: String], directory: String, baseName: String,
                 startedAt: Date, phase: Phase, muxer: MP4Muxer?, catalog: any RecordingCatalog, events: EventBroadcaster,
                 settings: SessionSettings, metrics: IngestMetrics, logger: Logger, shippingEpoch: Int?) {
        self.id = id
        self.shippingEpoch = shippingEpoch
        shipping = shippingEpoch.map(ShippingLedger.init(epoch:))
        self.members = members
        agentID = members[0].agentID
        memberIDs = members.map { ($0.agentID, $0.wireID) }
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
        var logger = logger
        logger[metadataKey: "session"] = "\(id)"
        logger[metadataKey: "agent"] = "\(memberIDs.map(\.agentID).joined(separator: ","))"
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
        case .recording, .dormant: false
        }
    }

    /// The lane of the member `agentID` opened (or resumes) as `wireID`.
    nonisolated func lane(ofAgent agentID: String, wireID: SessionID) -> UInt16? {
        memberIDs.firstIndex { $0.agentID == agentID && $0.wireID == wireID }.map(UInt16.init)
    }

    /// The id member `lane`'s agent knows the session by.
    nonisolated func wireID(lane: UInt16) -> SessionID { memberIDs[Int(lane)].wireID }

    // MARK: Attachment

    /// Member `lane`'s agent resumes its part on `connection`. A session found after a restart
    /// reopens its files first, with the settings it was started with.
    /// `clock`: the agent's clock estimate on this connection (a session across agents maps
    /// its samples through it).
    func attach(lane: UInt16, connection: UInt64, clock: ClockEstimator.Estimate? = nil) throws(ProtocolError) -> SessionValidator.ResumePoint {
        let m = Int(lane)
        defer { if let clock, members.indices.contains(m) { clockUpdated(lane: lane, clock) } }
        switch phase {
        case .finished, .suspended:
            throw ProtocolError(.unknownSession, "session \(id) has finished")
        case .dormant(let deadline):
            try reopenFiles(deadline: deadline)
            members[m].attachment = .attached(connection: connection)
            return members[m].resumePoint
        case .recording:
            switch members[m].attachment {
            case .attached(let other) where other != connection:
                throw ProtocolError(.sessionBusy, "session \(members[m].wireID) is still attached to another connection")
            case .left:
                throw ProtocolError(.unknownSession, "\(members[m].agentID)'s part of session \(id) has ended")
            case .attached, .detached:
                members[m].attachment = .attached(connection: connection)
                logger.info("agent resumed the session", metadata: ["member": "\(members[m].agentID)", "acknowledged": "\(members[m].acknowledged)"])
                return members[m].resumePoint
            }
        }
    }

    /// Reopens a dormant session's files: the last one continues after its last durable
    /// fragment (a torn tail is cut), the ack point is what the files hold. Every member waits
    /// for its agent until the session's `deadline`.
    private func reopenFiles(deadline: ContinuousClock.Instant) throws(ProtocolError) {
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
        if !isAcrossAgents {
            members[0].open = open
            members[0].sessionTracks = Dictionary(uniqueKeysWithValues: open.tracks.map { ($0.id, $0.id) })
        }
        for m in members.indices {
            let durable = SequenceLane.local(report.durable[members[m].lane])
            members[m].acknowledged = durable
            members[m].reportedAck = durable
            members[m].highestReceived = durable
            members[m].attachment = .detached(deadline: deadline)
        }
        phase = .recording
        // What the bucket holds of it is looked up before anything ships (``LiveShipper``).
        shipping?.fragmentDurable(file: (report.path as NSString).lastPathComponent, path: report.path, fileEnd: report.fileEnd, durable: report.durable)
        adoptFiles(through: report.segmentIndex)
        logger.notice("session resumed after a server restart", metadata: [
            "file": "\(report.path)", "samples_in_file": "\(report.samplesInFile)",
            "acknowledged": "\(members.map(\.acknowledged))", "torn_bytes_discarded": "\(report.bytesDiscarded)"])
    }

    /// The connection ended without closing the session: wait for a resume. A session that
    /// never received a sample has nothing to keep: it is discarded at once, so that a peer
    /// opening sessions and dropping the connection holds no slot, file or catalog row
    /// (protocol.md §9). Returns true when the session ended here.
    func detach(connection: UInt64, now: ContinuousClock.Instant) -> Bool {
        guard case .recording = phase, let m = members.firstIndex(where: { $0.attachment == .attached(connection: connection) }) else { return false }
        guard hasSamples || isAcrossAgents else {
            discardEmpty(reason: "the connection ended before the first sample")
            return true
        }
        members[m].attachment = .detached(deadline: now + settings.resumeWindow)
        logger.notice("agent disconnected; waiting \(settings.resumeWindow) for a resume", metadata: ["member": "\(members[m].agentID)"])
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

    /// Admits a run of member `lane`'s samples, in order, in one call (one actor hop per read
    /// cycle instead of one per sample). Stops at the first that fails.
    func append(_ samples: ArraySlice<Sample>, lane: UInt16 = 0) -> AppendOutcome {
        var outcome = AppendOutcome()
        defer { reportQueue() }
        for index in samples.indices {
            do {
                try admit(samples[index], member: Int(lane))
            } catch {
                outcome.failure = (index, error)
                break
            }
        }
        outcome.acknowledged = takeAck(lane: lane)
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
    /// member `lane`'s new ack point, or the session-scoped error a storage failure ends the
    /// session with. May block on the disk: the connection calls it on a storage thread.
    func syncWritten(lane: UInt16 = 0) -> Result<UInt64?, ProtocolError> {
        defer { reportQueue() }
        do throws(ProtocolError) {
            try syncIfDue()
            try endIfRefused(member: Int(lane))
            return .success(takeAck(lane: lane))
        } catch {
            return .failure(error)
        }
    }

    /// Member `lane`'s ack point, when it moved since its connection was last told.
    func takeAck(lane: UInt16) -> UInt64? {
        let m = Int(lane)
        guard members[m].acknowledged > members[m].reportedAck else { return nil }
        members[m].reportedAck = members[m].acknowledged
        return members[m].acknowledged
    }

    /// ``syncWritten(lane:)`` for callers already off the event loop (a track's end, a member
    /// leaving: the others' samples it held back may be in fragments nobody syncs soon).
    func syncIfDue() throws(ProtocolError) {
        guard syncIsDue, let muxer else { return }
        let events: [MuxerEvent]
        do { events = try muxer.syncWrittenFragments() } catch { throw storageFailed(error) }
        try process(events)
    }

    /// Admits one sample of member `m`.
    private func admit(_ sample: Sample, member m: Int) throws(ProtocolError) {
        guard case .recording = phase, let muxer, members[m].isAttached else {
            throw ProtocolError(.noOpenSession, "session \(members[m].wireID) is not open on this connection")
        }
        members[m].highestReceived = max(members[m].highestReceived, sample.sequence)
        if members[m].firstDTS == nil { members[m].firstDTS = sample.dts }
        guard let track = members[m].sessionTracks[sample.track], let stats = tracks[track],
              stats.status != .failed || !settings.failSessionOnTrackError else {
            throw ProtocolError(.unknownTrack, "track \(sample.track) is not in session \(members[m].wireID)")
        }
        guard let sequence = members[m].muxerSequence(sample.sequence) else {
            throw ProtocolError(.invalidField, scope: .session, "sequence \(sample.sequence) is past 2^48, the most a session across agents numbers")
        }
        var pts = sample.pts, dts = sample.dts
        if members[m].clock != nil {
            // The agent's clock onto the server's (docs/architecture.md, "Clock model").
            guard let p = members[m].clock?.serverTime(forAgentTime: sample.pts), let d = members[m].clock?.serverTime(forAgentTime: sample.dts) else {
                throw ProtocolError(.internalError, scope: .session, "no clock estimate for agent \(members[m].agentID) yet")
            }
            (pts, dts) = (p, d)
        }
        let input = MuxerSample(trackID: TrackMapping.muxerTrackID(track), sequence: sequence, pts: pts,
                                dts: dts, duration: sample.duration, isKeyframe: sample.flags.contains(.keyframe),
                                data: Array(buffer: sample.data))
        let events: [MuxerEvent]
        do {
            events = try muxer.append(input)
        } catch {
            try handle(error, track: track, sequence: sample.sequence, member: m)
            return
        }
        // In place: a copy of the statistics would copy their rate window on every sample.
        tracks[track]?.record(pts: pts, bytes: sample.data.readableBytes)
        metrics.sampleIngested(kind: stats.kind, bytes: sample.data.readableBytes)
        try process(events)
        try endIfRefused(member: m)
    }

    /// Tells the metrics how this session's not-yet-durable bytes changed since last time
    /// (all of them leave the queue when the session ends, whatever its outcome).
    func reportQueue() {
        let now = isFinished ? 0 : muxer?.bufferedPayloadBytes ?? 0
        guard now != reportedQueueBytes else { return }
        metrics.queueBytesChanged(by: now - reportedQueueBytes)
        reportedQueueBytes = now
    }

    func endTrack(_ end: TrackEnd, lane: UInt16 = 0) throws(ProtocolError) -> UInt64? {
        let m = Int(lane)
        guard muxer != nil, let track = members[m].sessionTracks[end.track] else {
            throw ProtocolError(.noOpenSession, "session \(members[m].wireID) is not open on this connection")
        }
        members[m].endedTracks.insert(end.track)
        let failed = end.reason == .error
        tracks[track]?.status = failed ? .failed : .ended
        tracks[track]?.lastError = failed ? end.message : nil
        logger.log(level: failed ? .warning : .info, "track \(track) ended", metadata: ["reason": "\(end.reason)", "message": "\(end.message)"])
        persistTracks()
        if failed, settings.failSessionOnTrackError {
            fail(.failed, "track \(track) failed: \(end.message)")
            throw ProtocolError(.trackFailed, scope: .session, "track \(end.track) failed (\(end.message)) and this server fails the session on track errors")
        }
        defer { reportQueue() }
        try endMuxerTrack(track, member: m)
        try endIfRefused(member: m)
        // Runs off the event loop (the connection handles control messages on storage threads).
        try syncIfDue()
        try endIfRefused(member: m)
        return takeAck(lane: lane)
    }

    /// Tells the muxer that session track `track` sends nothing more.
    private func endMuxerTrack(_ track: UInt8, member m: Int) throws(ProtocolError) {
        guard let muxer else { return }
        let events: [MuxerEvent]
        do { events = try muxer.endTrack(TrackMapping.muxerTrackID(track)) } catch {
            try handle(error, track: track, sequence: nil, member: m)
            return
        }
        try process(events)
    }

    func recordDrops(_ report: DropReport, lane: UInt16 = 0) {
        guard let track = members[Int(lane)].sessionTracks[report.track] else { return }
        tracks[track]?.dropped += Int64(report.count)
        logger.warning("agent dropped samples before sending", metadata: ["track": "\(track)", "count": "\(report.count)", "reason": "\(report.reason)"])
        persistTracks()
    }

    /// A new clock estimate for member `lane`'s agent (docs/architecture.md, "Clock model"):
    /// its later samples map onto the server's timeline through it. Ignored for a session of
    /// one agent, whose times go into the file as stamped.
    func clockUpdated(lane: UInt16, _ estimate: ClockEstimator.Estimate) {
        guard members[Int(lane)].clock != nil else { return }
        members[Int(lane)].clock?.update(estimate, agentNow: estimate.at &+ estimate.offset)
    }

    /// Handles what the muxer reports: each member's ack point follows its lane's durable point.
    func process(_ events: [MuxerEvent]) throws(ProtocolError) {
        for event in events {
            switch event {
            case .fragmentDurable(let report):
                metrics.fragmentWritten(bytes: report.byteCount, write: report.writeDuration, sync: report.syncDuration)
                settleAcknowledged(report.durable)
                if shipping != nil, let muxer {
                    let path = muxer.configuration.path(forSegment: report.segmentIndex)
                    shipping?.fragmentDurable(file: (path as NSString).lastPathComponent, path: path, fileEnd: report.fileEnd, durable: report.durable)
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
                refuse(SequenceLane.local(sequence), track: track, reason: reason, member: Int(SequenceLane.lane(of: sequence)))
            case .duplicateIgnored:
                metrics.duplicateIgnored()
            }
        }
    }

    /// A muxer error: bad sample content ends the member's part before that sample (protocol.md
    /// §6.12 `sampleRefused`); a storage error fails the session and keeps what is durable.
    private func handle(_ error: MuxerError, track: UInt8, sequence: UInt64?, member m: Int) throws(ProtocolError) {
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
            refuse(sequence, track: track, reason: reason, member: m)
            try endIfRefused(member: m)
        }
    }

    /// A write, fsync or finalization failed: the session fails and keeps what is durable.
    private func storageFailed(_ error: MuxerError) -> ProtocolError {
        fail(.failed, error.message)
        metrics.error(code: ProtocolError.Code.storageFailure)
        return ProtocolError(.storageFailure, scope: .session, "storage failed: \(error.message); what was acknowledged is kept")
    }

    /// Remembers member `m`'s first refused sample (its own sequence); ``endIfRefused(member:)``
    /// then ends its part.
    private func refuse(_ sequence: UInt64, track: UInt8, reason: String, member m: Int) {
        guard members.indices.contains(m) else { return }
        logger.warning("sample refused; the agent's part of the session ends before it", metadata: [
            "member": "\(members[m].agentID)", "track": "\(track)", "sequence": "\(sequence)", "reason": "\(reason)"])
        guard members[m].refusedSequence.map({ sequence < $0 }) ?? true else { return }
        members[m].refusedSequence = sequence
        members[m].refusal = reason.contains("sequence \(sequence)") ? reason : "track \(track) sequence \(sequence): \(reason)"
    }

    /// A refused sample ends its member's part: everything before it is kept, the ack point
    /// stays below it, and the agent is told with `sampleRefused`. A session of one agent ends
    /// with it (finalized with every sample before it); across agents the others go on.
    private func endIfRefused(member m: Int) throws(ProtocolError) {
        guard let refused = members[m].refusedSequence else { return }
        let reason = "\(ProtocolError.Code.sampleRefused): \(members[m].refusal)"
        if !isFinished {
            if isAcrossAgents { leave(member: m, reason: reason) } else { finalize(as: .failed, reason: reason) }
        }
        members[m].acknowledged = min(members[m].acknowledged, refused - 1)
        throw ProtocolError(.sampleRefused, scope: .session,
                            "\(members[m].refusal); the session ended: samples 1...\(members[m].acknowledged) are stored, none after")
    }

    /// Each member's ack point from the muxer's durable points, never past a refused sample;
    /// a member waiting to close is answered once all it sent is durable.
    func settleAcknowledged(_ durable: DurablePoints) {
        for m in members.indices {
            let point = min(SequenceLane.local(durable[members[m].lane]), members[m].refusedSequence.map { $0 - 1 } ?? .max)
            if point > members[m].acknowledged { members[m].acknowledged = point }
            if !members[m].closeWaiters.isEmpty, members[m].acknowledged >= members[m].highestReceived { answerClose(member: m) }
        }
    }

    /// Ends member `m`'s part while the session goes on: its tracks end in the recording (so
    /// the others stop waiting for them), and nothing more is taken from its agent.
    func leave(member m: Int, reason: String) {
        guard !members[m].hasLeft else { return }
        members[m].attachment = .left
        logger.notice("an agent's part of the session ended; the others go on", metadata: ["member": "\(members[m].agentID)", "reason": "\(reason)"])
        for track in Set(members[m].sessionTracks.values).sorted() where tracks[track]?.status == .active {
            tracks[track]?.status = .ended
            // A track the muxer cannot end (a storage failure) fails the session, which ends it too.
            try? endMuxerTrack(track, member: m)
        }
        persistTracks()
    }

    /// Wakes member `m`'s `SessionClose`, with its ack point.
    func answerClose(member m: Int) {
        let waiters = members[m].closeWaiters
        members[m].closeWaiters = []
        for waiter in waiters { waiter.resume(returning: members[m].acknowledged) }
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
        case .recording: state = members.contains(where: \.isAttached) || members.allSatisfy(\.hasLeft) ? "recording" : "detached"
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
                                   path: muxer?.configuration.path(forSegment: 0) ?? directory, lastAck: members[0].acknowledged, tracks: live)
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

import AdminModels
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import Shared

/// Where a session's files go: the storage layout decides, from validated ids only.
typealias SessionLocator = @Sendable (_ agentID: String, _ sessionID: SessionID, _ date: Date) throws -> (directory: String, baseName: String)

/// All sessions and connected agents of one server. Opens and resumes sessions, finds
/// unfinished ones after a restart, sweeps the ones whose resume window passed, and serves
/// the admin API. How a session finishes is the session's own business (``RecordingSession``).
actor SessionRegistry {
    /// A connected agent and how to send it commands.
    struct AgentLink: Sendable {
        let connection: UInt64
        var info: ConnectedAgentInfo
        /// What the agent and this server negotiated (HelloReply).
        var capabilities: Capabilities = []
        let send: @Sendable (Message) async -> Void
    }

    /// Catalog reads and writes block (SQLite waits up to its busy timeout): the registry runs
    /// on a storage thread, not on the event loop of the connection that calls.
    private nonisolated let executor = StorageExecutor()
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    let catalog: any RecordingCatalog
    /// What `GET /v1/events` streams and the webhooks post: agents coming and going, sessions
    /// starting and ending, recording files becoming final.
    nonisolated let events: EventBroadcaster
    nonisolated let dataDirectory: String
    nonisolated let startedAt = Date()
    /// Where agents connect (`host:port`, the port once bound), for the heartbeat.
    nonisolated let ingestAddress = NIOLockedValueBox("")
    let settings: SessionSettings
    let metrics: any IngestMetrics
    let locate: SessionLocator
    let logger: Logger
    private let maxSessions: Int
    private let maxSessionsPerAgent: Int
    /// Resume windows run on it (injected by tests; the continuous clock otherwise).
    nonisolated let clock: any ServerClock
    /// What this server offers agents in its HelloReply (intersected with theirs): everything,
    /// except the second acknowledgement level (`remoteAcks`) unless it ships recording
    /// sessions to object storage while they record (``LiveShipper``).
    nonisolated var offeredCapabilities: Capabilities { liveShipper == nil ? Capabilities.all.subtracting(.remoteAcks) : .all }
    /// Ships recording sessions' durable fragments to object storage while they record and
    /// sends their agents `RemoteAck`s; nil without an object store.
    nonisolated let liveShipper: LiveShipper?
    /// How long a server's sessions stay its own after its last heartbeat in a shared catalog:
    /// after that, another server may take them over (``takeOver(_:agentID:)``).
    static let lease: Duration = .seconds(15)
    /// Every session not yet finished: recording, waiting for its agent to resume it, or
    /// found unfinished after a restart (dormant).
    var sessions: [SessionID: RecordingSession] = [:]
    /// Finished sessions to ask, at the next sweep, whether their catalog rows still need
    /// writing (``RecordingSession/repairCatalog()``); kept until they do not.
    private var owingCatalog: [RecordingSession] = []
    private var agents: [String: AgentLink] = [:]
    private var nextConnection: UInt64 = 1
    /// Admin starts waiting for their agent to open the session (keyed by a token per wait).
    private var startWaiters: [UInt64: (agentID: String, continuation: CheckedContinuation<StartOutcome, Never>)] = [:]
    private var nextWaiter: UInt64 = 0
    /// How long an admin start waits for the agent's SessionOpen before answering without an id.
    static let startWait = Duration.seconds(10)
    private(set) var isShuttingDown = false
    /// Sessions across agents waiting for every agent's `SessionOpen` (SessionRegistry+Groups).
    var pendingGroups: [SessionID: PendingGroup] = [:]
    /// Agents of a session across agents that did not start, with why and until when a late
    /// `SessionOpen` of theirs (the answer to that start) is refused rather than recorded alone.
    var failedJoins: [String: (reason: String, until: ContinuousClock.Instant)] = [:]
    /// Each connected agent's newest clock estimate: a session across agents maps its samples'
    /// times through it.
    private var clocks: [String: ClockEstimator.Estimate] = [:]
    /// Each agent's clock estimator, for its next connection to go on from
    /// (``ClockEstimator/carryOver()``); at most ``clockHistoryCapacity``.
    private var clockHistories: [String: ClockEstimator] = [:]
    static let clockHistoryCapacity = 4096

    init(catalog: any RecordingCatalog, settings: SessionSettings, maxSessions: Int, maxSessionsPerAgent: Int = 4,
                metrics: any IngestMetrics, logger: Logger, dataDirectory: String, clock: any ServerClock = SystemServerClock(),
                events: EventBroadcaster = EventBroadcaster(), liveShipper: LiveShipper? = nil, locate: @escaping SessionLocator) {
        self.catalog = catalog
        self.liveShipper = liveShipper
        self.events = events
        self.clock = clock
        self.dataDirectory = dataDirectory
        self.settings = settings
        self.maxSessions = maxSessions
        self.maxSessionsPerAgent = maxSessionsPerAgent
        self.metrics = metrics
        self.logger = logger
        self.locate = locate
    }

    func newConnectionID() -> UInt64 {
        defer { nextConnection += 1 }
        return nextConnection
    }

    var resumeWindow: Duration { settings.resumeWindow }

    // MARK: Agents

    func agentConnected(_ link: AgentLink) {
        agents[link.info.id] = link
        events.publish(ServerEvent(type: .agentOnline, agentID: link.info.id))
        let seen = AgentRecord(id: link.info.id, lastAddress: link.info.address, softwareVersion: link.info.softwareVersion,
                               firstSeen: link.info.connectedAt, lastSeen: link.info.connectedAt)
        CatalogWrites.attempt("agent \(seen.id)", logger: logger, metrics: metrics) { try catalog.recordAgentSeen(seen) }
    }

    func agentDisconnected(_ agentID: String, connection: UInt64) {
        guard let link = agents[agentID], link.connection == connection else { return }
        agents[agentID] = nil
        // The catalog's sighting ends with the last message heard (what the admin API shows of
        // an agent that is not connected).
        let seen = AgentRecord(id: agentID, lastAddress: link.info.address, softwareVersion: link.info.softwareVersion,
                               firstSeen: link.info.connectedAt, lastSeen: link.info.lastSeen)
        CatalogWrites.attempt("agent \(agentID)", logger: logger, metrics: metrics) { try catalog.recordAgentSeen(seen) }
        events.publish(ServerEvent(type: .agentOffline, agentID: agentID))
    }

    /// - Parameter history: the agent's clock estimator on this connection, after a new exchange.
    func agentSeen(_ agentID: String, connection: UInt64, roundTripMillis: Double?, history: ClockEstimator? = nil, sessionID: String?) {
        let clock = history?.estimate
        if let history, clock != nil, agents[agentID]?.connection == connection { keepClockHistory(history, of: agentID) }
        updateAgent(agentID, connection: connection) { info in
            info.lastSeen = Date()
            if let roundTripMillis { info.roundTripMillis = roundTripMillis }
            if let clock {
                clocks[agentID] = clock
                info.clock = AgentClock(clock)
                info.clockOffsetMillis = info.clock?.offsetMillis
                metrics.agentClock(agentID, clock)
            }
            info.sessionID = sessionID
        }
        if let clock {
            for session in allSessions() where session.isAcrossAgents {
                for (lane, member) in session.memberIDs.enumerated() where member.agentID == agentID {
                    Task { await session.clockUpdated(lane: UInt16(lane), clock) }
                }
            }
        }
    }

    func latestClock(of agentID: String) -> ClockEstimator.Estimate? { clocks[agentID] }

    /// The agent's clock history from its newest connection, readied for a new one (nil when
    /// there is none). Kept as each exchange comes in, not when the connection ends: an agent
    /// whose network was cut reconnects before the server has noticed that the old connection
    /// is dead.
    func clockHistory(of agentID: String) -> ClockEstimator? {
        guard var history = clockHistories[agentID] else { return nil }
        history.carryOver()
        return history
    }

    private func keepClockHistory(_ history: ClockEstimator, of agentID: String) {
        if clockHistories[agentID] == nil, clockHistories.count >= Self.clockHistoryCapacity,
           let stalest = clockHistories.min(by: { ($0.value.estimate?.at ?? 0) < ($1.value.estimate?.at ?? 0) }) {
            clockHistories[stalest.key] = nil
        }
        clockHistories[agentID] = history
    }

    /// Changes what the admin API shows of a connected agent, in place; `connection` (when
    /// given) must still be the agent's current one.
    private func updateAgent(_ agentID: String, connection: UInt64? = nil, _ change: (inout ConnectedAgentInfo) -> Void) {
        guard let current = agents[agentID], connection == nil || current.connection == connection else { return }
        change(&agents[agentID]!.info)
    }

    // MARK: Sessions

    /// An agent's `SessionOpen`: a session of its own, or its part of a session across agents
    /// it was asked to join (which waits until every agent of it has opened its part). Returns
    /// the session and the agent's lane in it.
    func openSession(_ open: SessionOpen, agentID: String, connection: UInt64) async throws(ProtocolError) -> (RecordingSession, UInt16) {
        guard !isShuttingDown else { throw ProtocolError(.shuttingDown, scope: .session, "the server is shutting down") }
        if sessions[open.sessionID] != nil || (try? catalog.session(id: open.sessionID.value)) != nil {
            throw ProtocolError(.sessionBusy, "session id \(open.sessionID) is already in use; choose a new one")
        }
        if let group = pendingGroupID(of: agentID) { return try await join(group, open: open, agentID: agentID, connection: connection) }
        if let failed = failedJoins.removeValue(forKey: agentID), clock.now < failed.until,
           !startWaiters.values.contains(where: { $0.agentID == agentID }) {
            throw ProtocolError(.internalError, scope: .session, "the session across agents this agent was asked to join did not start: \(failed.reason)")
        }
        let member = SessionMember(agentID: agentID, wireID: open.sessionID, lane: 0, open: open,
                                   sessionTracks: Dictionary(uniqueKeysWithValues: open.tracks.map { ($0.id, $0.id) }),
                                   attachment: .attached(connection: connection))
        return (try createSession(open, members: [member]), 0)
    }

    /// Starts recording `open`'s tracks for `members` (one agent, or every agent of a session
    /// across agents, whose tracks `open` holds renumbered): its directory, sidecar, muxer and
    /// catalog row.
    func createSession(_ open: SessionOpen, members: [SessionMember]) throws(ProtocolError) -> RecordingSession {
        let agentID = members[0].agentID
        // Sessions waiting after a restart count: each will record again when its agent resumes it.
        guard allSessions().count < maxSessions else {
            metrics.budgetRefused("sessions")
            throw ProtocolError(.resourceExhausted, "the server records \(maxSessions) sessions at most (maxSessions); try again when one ends")
        }
        let ofThisAgent = allSessions().filter { $0.memberIDs.contains { $0.agentID == agentID } }.count
        guard ofThisAgent < maxSessionsPerAgent else {
            metrics.budgetRefused("agent_sessions")
            throw ProtocolError(.resourceExhausted, "agent \(agentID) has \(ofThisAgent) sessions open or waiting for a resume, "
                                + "the most one agent may have (maxSessionsPerAgent)")
        }
        var trackConfigs: [TrackConfiguration] = []
        for d in open.tracks { trackConfigs.append(try TrackMapping.configuration(d)) }
        let now = Date()
        let location: (directory: String, baseName: String)
        do { location = try locate(agentID, open.sessionID, now) } catch {
            throw ProtocolError(.storageFailure, "cannot create the session's directory: \(error)")
        }
        let muxer: MP4Muxer
        do {
            try SessionSidecar.write(open, settings: settings.pinned, directory: location.directory)
            try SessionSidecar.writeMembers(members, directory: location.directory)
            muxer = try MP4Muxer(configuration: settings.muxerConfiguration(tracks: trackConfigs, directory: location.directory,
                                                                           baseName: location.baseName, creationTime: Int64(now.timeIntervalSince1970)))
            try muxer.start()
        } catch {
            // Nothing was recorded: leave nothing behind (the sidecar was written first). Best
            // effort: the refusal below is what matters, and an empty directory harms nothing.
            try? FileManager.default.removeItem(atPath: location.directory)
            if let muxerError = error as? MuxerError, let refusal = TrackMapping.refusal(of: muxerError) { throw refusal }
            throw ProtocolError(.storageFailure, "cannot start the recording: \(error.message)")
        }
        let row = SessionRecord(id: open.sessionID.value, agentID: agentID, labels: RecordingSession.labels(of: open), status: .recording,
                                createdAt: now, directory: location.directory)
        CatalogWrites.attempt("session \(row.id)", logger: logger, metrics: metrics) { try catalog.insertSession(row) }
        let session = RecordingSession(id: open.sessionID, members: members, open: open, directory: location.directory, startedAt: now,
                                       muxer: muxer, catalog: catalog, events: events, settings: settings, metrics: metrics, logger: logger,
                                       shippingEpoch: liveShipper == nil ? nil : 0)
        register(session)
        liveShipper?.follow(session)
        for member in members {
            for (token, waiter) in startWaiters where waiter.agentID == member.agentID { resolveStartWaiter(token, with: .opened(open.sessionID.value)) }
            updateAgent(member.agentID) { $0.captureFailure = nil }
        }
        metrics.sessionStarted()
        events.publish(ServerEvent(type: .sessionStarted, agentID: agentID, sessionID: open.sessionID.value))
        logger.info("session opened", metadata: ["session": "\(open.sessionID)", "agent": "\(members.map(\.agentID))", "tracks": "\(open.tracks.map(\.label))",
                                                  "directory": "\(location.directory)"])
        return session
    }

    /// What a `SessionResume` gets.
    enum ResumeOutcome: Sendable {
        /// The session goes on from this point.
        case resumed(RecordingSession, lane: UInt16, SessionValidator.ResumePoint)
        /// The session had finished and told its agent so, but the agent never got the
        /// answer (protocol.md §6.7): it gets the same `SessionClosed` again.
        case alreadyClosed(SessionClosed)
    }

    /// Re-attaches a session to a new connection (one found after a restart reopens its
    /// files), or repeats the `SessionClosed` of one that finished meanwhile.
    /// Whether `id` is an agent's part of a session across agents: its resume needs the agent's
    /// clock estimate first (its samples are mapped onto the server's clock).
    func resumeNeedsClock(_ id: SessionID) -> Bool { sessions[id]?.isAcrossAgents ?? false }

    func resumeSession(_ id: SessionID, agentID: String, connection: UInt64, clock: ClockEstimator.Estimate? = nil) async throws(ProtocolError) -> ResumeOutcome {
        if sessions[id] == nil { try await takeOver(id, agentID: agentID) }
        guard let session = sessions[id], let lane = session.lane(ofAgent: agentID, wireID: id) else {
            if let closed = finishedSessionAnswer(id, agentID: agentID) { return .alreadyClosed(closed) }
            throw ProtocolError(.unknownSession, "no session \(id) to resume for agent \(agentID) (never existed, finished, or expired)")
        }
        do {
            return .resumed(session, lane: lane, try await session.attach(lane: lane, connection: connection, clock: clock))
        } catch where error.code == .unknownSession {
            // It finished a moment ago (the sweep expired it, not yet removed from `sessions`):
            // the same answer as once it is gone.
            if let closed = finishedSessionAnswer(id, agentID: agentID) { return .alreadyClosed(closed) }
            throw error
        }
    }

    /// The `SessionClosed` a finished session of `agentID` sent (or would have sent) to its
    /// agent, from the catalog; nil when the catalog does not know its durable point.
    private func finishedSessionAnswer(_ id: SessionID, agentID: String) -> SessionClosed? {
        // A catalog that cannot be read leaves the earlier answer, unknownSession: the files
        // hold what they hold either way; only the agent's account of it is less exact.
        guard let record = try? catalog.session(id: id.value), record.agentID == agentID, record.status != .recording,
              let durable = record.durableSequence else { return nil }
        return record.status == .cancelled
            ? SessionClosed(sessionID: id, outcome: .cancelled, durableSequence: 0)
            : SessionClosed(sessionID: id, outcome: .finalized, durableSequence: durable)
    }

    /// The session `agentID` records now (live or waiting for a resume), if any.
    func runningSessionID(of agentID: String) async -> String? {
        for session in allSessions() where session.memberIDs.contains(where: { $0.agentID == agentID }) {
            if await !session.isFinished { return session.id.value }
        }
        return nil
    }

    /// What became of a StartSession sent for an operator.
    enum StartOutcome: Sendable, Equatable {
        /// The agent opened this session.
        case opened(String)
        /// The agent answered with an `Error` (protocol.md §6.16), for example `captureFailed`.
        case refused(ErrorReport)
        /// Neither within ``startWait``.
        case noAnswer
    }

    /// Runs `send` (a StartSession to `agentID`) and returns what the agent made of it: the
    /// next session it opens, its refusal, or no answer after ``startWait``.
    func awaitingNextSession(of agentID: String, send: @escaping @Sendable () async -> Void) async -> StartOutcome {
        nextWaiter += 1
        let token = nextWaiter
        return await withCheckedContinuation { continuation in
            startWaiters[token] = (agentID, continuation)
            Task {
                await send()
                try? await Task.sleep(for: Self.startWait)
                self.resolveStartWaiter(token, with: .noAnswer)
            }
        }
    }

    private func resolveStartWaiter(_ token: UInt64, with outcome: StartOutcome) {
        startWaiters.removeValue(forKey: token)?.continuation.resume(returning: outcome)
    }

    /// The agent refused a StartSession. A capture failure stays on the agent (admin API,
    /// `recordctl agents`) until it next opens a session; waiting starts get the reason.
    func startRefused(by agentID: String, connection: UInt64, report: ErrorReport) {
        if report.code == .captureFailed {
            metrics.captureFailed()
            updateAgent(agentID, connection: connection) { $0.captureFailure = CaptureFailureInfo(message: report.message, at: Date()) }
            events.publish(ServerEvent(type: .agentCaptureFailed, agentID: agentID, message: report.message))
        }
        for (token, waiter) in startWaiters where waiter.agentID == agentID { resolveStartWaiter(token, with: .refused(report)) }
        if let group = pendingGroupID(of: agentID) { failGroup(group, "agent \(agentID) refused the start: \(report.message) (\(report.code))") }
    }

    /// A session may have ended (across agents, one agent's part may have ended instead): once
    /// it has, it is no longer live, and its catalog rows are owed until written.
    func sessionEnded(_ session: RecordingSession) async {
        guard await session.isFinished else { return }
        owingCatalog.append(session)
        guard sessions[session.id] === session else { return }  // told already
        unregister(session)
        let outcome = await session.outcome
        let state = await session.snapshot().state
        events.publish(ServerEvent(type: .sessionEnded, agentID: session.agentID, sessionID: session.id.value, status: outcome ?? state))
    }

    /// Sessions unfinished in the catalog (the server died while they recorded) wait for
    /// their agents for one resume window, then are finalized as recovered.
    func loadUnfinishedSessions() {
        let unfinished: [SessionRecord]
        do { unfinished = try catalog.unfinishedSessions() } catch {
            logger.error("cannot read the unfinished sessions from the catalog; none will be resumed or recovered", metadata: ["error": "\(error)"])
            metrics.catalogWriteFailed()
            unfinished = []
        }
        let deadline = clock.now + settings.resumeWindow
        for record in unfinished {
            guard let id = try? SessionID(validating: record.id) else { continue }
            // The layout's name; if locating fails, the same default the layout uses (resume reports any real problem).
            let baseName = (try? locate(record.agentID, id, record.createdAt).baseName) ?? StorageLayout.baseName
            let members: [SessionMember]?
            do { members = try SessionSidecar.readMembers(directory: record.directory) } catch {
                // Its agents cannot take their parts back; recovery finalizes its files when the window ends.
                logger.error("cannot read the members of an unfinished session across agents", metadata: ["session": "\(record.id)", "error": "\(error)"])
                members = nil
            }
            let session = RecordingSession(foundAfterRestart: record, id: id, members: members, baseName: baseName, deadline: deadline,
                                           catalog: catalog, events: events, settings: settings, metrics: metrics, logger: logger,
                                           shippingEpoch: liveShipper == nil ? nil : epoch(of: record.id))
            register(session)
            liveShipper?.follow(session)
            // Counted live while it waits: it ends either resumed-then-finished or recovered.
            metrics.sessionStarted()
            logger.notice("found an unfinished session from before the restart; waiting for its agent", metadata: ["session": "\(record.id)"])
        }
        reconcileStaleRows()
    }

    /// Start-up pass for finished sessions whose rows a failed catalog write left behind (the
    /// server stopped before its retries succeeded): each file still `recording` is finalized
    /// (recovery; nothing to do when it is) and takes its session's end, then the rows are
    /// read back from the files.
    private func reconcileStaleRows() {
        let stale: [SessionRecord]
        do { stale = try catalog.finishedSessionsWithStaleRows() } catch {
            logger.error("cannot look for stale catalog rows at start-up", metadata: ["error": "\(error)"])
            metrics.catalogWriteFailed()
            return
        }
        for record in stale {
            for var recording in recordingsInCatalog(session: record.id) where recording.status == .recording {
                do {
                    _ = try MP4Recovery.recover(path: recording.path)
                } catch where error.code == .noCompleteFragment {
                    // It never held a durable fragment (the session failed on a full disk and
                    // could not delete its row): the row goes, then the file.
                    if CatalogWrites.attempt("empty recording \(recording.id)", logger: logger, metrics: metrics, {
                        try catalog.deleteRecording(id: recording.id)
                    }) { RandomAccessFile.remove(recording.path) }
                    continue
                } catch {
                    if FileManager.default.fileExists(atPath: recording.path) {
                        recording.error = "left fragmented: run recordctl recover \(recording.path)"
                    }
                }
                recording.status = record.status
                recording.finishedAt = record.endedAt ?? Date()
                CatalogWrites.attempt("recording \(recording.id)", logger: logger, metrics: metrics) { try catalog.upsertRecording(recording) }
            }
            CatalogReconciler(catalog: catalog, logger: logger, metrics: metrics).reconcile(sessionID: record.id)
            logger.notice("catalog rows of a finished session reconciled with its files at start-up", metadata: ["session": "\(record.id)"])
        }
    }

    /// Finishes sessions whose resume window has passed (finalized as `interrupted`, or
    /// recovered when found after a restart). Called periodically. The check and the finish
    /// happen in one turn of the session's actor, so an agent resuming at that moment either
    /// gets its session back or finds it finished, never a session finalized under it.
    func sweep() async { await sweep(now: clock.now) }

    /// ``sweep()`` as if it were `now`.
    func sweep(now: ContinuousClock.Instant) async {
        for session in allSessions() where await session.expireIfAbandoned(now) { await sessionEnded(session) }
        await retryCatalogWrites()
    }

    /// Catalog writes that failed for finished sessions (a full disk, a busy database) are
    /// written again until they succeed: the catalog must end up saying what the files hold.
    private func retryCatalogWrites() async {
        var still: [RecordingSession] = []
        for session in owingCatalog where await !session.repairCatalog() { still.append(session) }
        owingCatalog = still
    }

    /// A session's recordings, or none (logged and counted) when the catalog cannot be read.
    private func recordingsInCatalog(session id: String) -> [RecordingRecord] {
        do { return try catalog.recordings(sessionID: id) } catch {
            logger.error("cannot read a session's recordings from the catalog", metadata: ["session": "\(id)", "error": "\(error)"])
            metrics.catalogWriteFailed()
            return []
        }
    }

    /// Graceful shutdown: refuse new sessions, tell the agents to resume later, and suspend
    /// every live session (``RecordingSession/suspend()``) so that they resume into the same
    /// files after the restart. A session its agent closed already is finalized as usual.
    func shutdown() async {
        isShuttingDown = true
        // Event streams are open HTTP responses: they end now, so the admin listener can stop.
        events.finishAll()
        for link in agents.values {
            await link.send(.error(ErrorReport(code: .shuttingDown, scope: .connection, message: "the server is shutting down; resume later")))
        }
        for (id, group) in pendingGroups { failGroup(id, "the server is shutting down") ; _ = group }
        for session in allSessions() {
            await session.suspend()
            unregister(session)
            owingCatalog.append(session)
        }
        // A last try for catalog writes that failed; what still fails is reconciled at the next start.
        await retryCatalogWrites()
    }

    /// A session is found by its id and, across agents, by the id each agent opened its part with.
    func register(_ session: RecordingSession) {
        sessions[session.id] = session
        for member in session.memberIDs { sessions[member.wireID] = session }
    }

    private func unregister(_ session: RecordingSession) {
        sessions[session.id] = nil
        for member in session.memberIDs where sessions[member.wireID] === session { sessions[member.wireID] = nil }
    }

    var liveSessionCount: Int { sessions.count { $0.key == $0.value.id } }
    /// Each session once (a session across agents is listed under several ids).
    func allSessions() -> [RecordingSession] { sessions.filter { $0.key == $0.value.id }.map(\.value) }
    func allAgentLinks() -> [AgentLink] { Array(agents.values) }
    func agentLink(_ id: String) -> AgentLink? { agents[id] }
    func session(_ id: SessionID) -> RecordingSession? { sessions[id] }
    var connectedAgentCount: Int { agents.count }

    /// This server as its heartbeat describes it.
    func heartbeatRow() -> ServerRecord {
        ServerRecord(id: catalog.serverID, ingestAddress: ingestAddress.withLockedValue { $0 }, softwareVersion: ServerVersion.current,
                               startedAt: startedAt, heartbeatAt: Date(), liveSessions: liveSessionCount, connectedAgents: connectedAgentCount)
    }

    /// This server's row in the fleet table of a shared catalog (every 5 s from housekeeping;
    /// an embedded catalog has no fleet to tell, and a write every 5 s would only churn it). A
    /// failed write is logged and counted; the next heartbeat tries again.
    func recordHeartbeat() {
        guard catalog.isShared else { return }
        let row = heartbeatRow()
        do { try catalog.recordHeartbeat(row) } catch {
            logger.warning("cannot record this server's heartbeat in the catalog; trying again in 5 s", metadata: ["error": "\(error)"])
            metrics.catalogWriteFailed()
        }
    }

    /// A session's epoch (``ShippingLedger/epoch``); 0 when the catalog cannot say (logged).
    func epoch(of sessionID: String) -> Int {
        do { return try catalog.sessionEpoch(id: sessionID) } catch {
            logger.error("cannot read a session's epoch; shipping it as epoch 0", metadata: ["session": "\(sessionID)", "error": "\(error)"])
            return 0
        }
    }

    /// A `RemoteAck` (or another message) for `agentID` on `connection`, when that is still
    /// its connection and it negotiated `remoteAcks` (``LiveShipper``).
    func deliver(_ message: Message, to agentID: String, connection: UInt64) async {
        guard let link = agents[agentID], link.connection == connection, link.capabilities.contains(.remoteAcks) else { return }
        await link.send(message)
    }

    func liveSessionIDs() -> Set<String> { Set(allSessions().map(\.id.value)) }

    func isLive(_ sessionID: String) -> Bool {
        guard let id = try? SessionID(validating: sessionID) else { return false }
        return sessions[id] != nil
    }
}

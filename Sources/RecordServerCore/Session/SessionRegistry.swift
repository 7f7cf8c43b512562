import Foundation
import Logging
import NIOCore
import Shared

/// Where a session's files go: the storage layout decides, from validated ids only.
public typealias SessionLocator = @Sendable (_ agentID: String, _ sessionID: SessionID, _ date: Date) throws -> (directory: String, baseName: String)

/// All sessions and connected agents of one server. Opens, resumes and expires sessions,
/// finds unfinished ones after a crash, and serves the admin API.
public actor SessionRegistry {
    /// A connected agent and how to send it commands.
    struct AgentLink: Sendable {
        let connection: UInt64
        let info: ConnectedAgentInfo
        let send: @Sendable (Message) async -> Void
    }

    /// A session found unfinished at startup: it waits for its agent to resume it.
    struct DormantSession: Sendable {
        let record: SessionRecord
        let deadline: ContinuousClock.Instant
    }

    static let openFileName = "session.mcrp"
    static let settingsFileName = "session-settings.json"

    let catalog: any RecordingCatalog
    nonisolated let dataDirectory: String
    nonisolated let startedAt = Date()
    private let settings: SessionSettings
    private let metrics: any IngestMetrics
    private let locate: SessionLocator
    let logger: Logger
    private let maxSessions: Int
    private let maxSessionsPerAgent: Int
    private let clock = ContinuousClock()
    private var sessions: [SessionID: RecordingSession] = [:]
    private var dormant: [SessionID: DormantSession] = [:]
    private var agents: [String: AgentLink] = [:]
    private var nextConnection: UInt64 = 1
    /// Admin starts waiting for their agent to open the session (keyed by a token per wait).
    private var startWaiters: [UInt64: (agentID: String, continuation: CheckedContinuation<String?, Never>)] = [:]
    private var nextWaiter: UInt64 = 0
    /// How long an admin start waits for the agent's SessionOpen before answering without an id.
    static let startWait = Duration.seconds(10)
    public private(set) var isShuttingDown = false

    public init(catalog: any RecordingCatalog, settings: SessionSettings, maxSessions: Int, maxSessionsPerAgent: Int = 4,
                metrics: any IngestMetrics, logger: Logger, dataDirectory: String, locate: @escaping SessionLocator) {
        self.catalog = catalog
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

    public var resumeWindow: Duration { settings.resumeWindow }

    // MARK: Agents

    func agentConnected(_ link: AgentLink) {
        agents[link.info.id] = link
        let seen = AgentRecord(id: link.info.id, lastAddress: link.info.address, softwareVersion: link.info.softwareVersion,
                               firstSeen: link.info.connectedAt, lastSeen: link.info.connectedAt)
        CatalogWrites.attempt("agent \(seen.id)", logger: logger, metrics: metrics) { try catalog.recordAgentSeen(seen) }
    }

    func agentDisconnected(_ agentID: String, connection: UInt64) {
        if agents[agentID]?.connection == connection { agents[agentID] = nil }
    }

    func agentSeen(_ agentID: String, connection: UInt64, roundTripMillis: Double?, sessionID: String?) {
        guard var link = agents[agentID], link.connection == connection else { return }
        var info = link.info
        info.lastSeen = Date()
        if let roundTripMillis { info.roundTripMillis = roundTripMillis }
        info.sessionID = sessionID
        link = AgentLink(connection: link.connection, info: info, send: link.send)
        agents[agentID] = link
    }

    // MARK: Sessions

    func openSession(_ open: SessionOpen, agentID: String, connection: UInt64) throws(ProtocolError) -> RecordingSession {
        guard !isShuttingDown else { throw ProtocolError(.shuttingDown, scope: .session, "the server is shutting down") }
        if sessions[open.sessionID] != nil || dormant[open.sessionID] != nil || (try? catalog.session(id: open.sessionID.value)) != nil {
            throw ProtocolError(.sessionBusy, "session id \(open.sessionID) is already in use; choose a new one")
        }
        guard sessions.values.count < maxSessions else {
            metrics.budgetRefused("sessions")
            throw ProtocolError(.resourceExhausted, "the server records \(maxSessions) sessions at most (maxSessions); try again when one ends")
        }
        let ofThisAgent = sessions.values.filter { $0.agentID == agentID }.count + dormant.values.filter { $0.record.agentID == agentID }.count
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
            try Self.writeSidecar(open, settings: settings.pinned, directory: location.directory)
            muxer = try MP4Muxer(configuration: settings.muxerConfiguration(tracks: trackConfigs, directory: location.directory,
                                                                           baseName: location.baseName, creationTime: Int64(now.timeIntervalSince1970)))
            try muxer.start()
        } catch let error as MuxerError where error.code == .invalidConfiguration {
            // Nothing was recorded: leave nothing behind (the sidecar was written first). Best
            // effort: the refusal below is what matters, and an empty directory harms nothing.
            try? FileManager.default.removeItem(atPath: location.directory)
            throw ProtocolError(.invalidCodecConfig, error.message)
        } catch {
            try? FileManager.default.removeItem(atPath: location.directory)
            throw ProtocolError(.storageFailure, "cannot start the recording: \(error.message)")
        }
        let labels = Dictionary(open.labels.map { ($0.key.value, $0.value) }, uniquingKeysWith: { a, _ in a })
        let row = SessionRecord(id: open.sessionID.value, agentID: agentID, labels: labels, status: .recording,
                                createdAt: now, directory: location.directory)
        CatalogWrites.attempt("session \(row.id)", logger: logger, metrics: metrics) { try catalog.insertSession(row) }
        let session = RecordingSession(id: open.sessionID, agentID: agentID, open: open, directory: location.directory, startedAt: now,
                                       muxer: muxer, acknowledged: 0, connection: connection, catalog: catalog, settings: settings,
                                       metrics: metrics, logger: logger)
        sessions[open.sessionID] = session
        for (token, waiter) in startWaiters where waiter.agentID == agentID { resolveStartWaiter(token, with: open.sessionID.value) }
        metrics.sessionStarted()
        logger.info("session opened", metadata: ["session": "\(open.sessionID)", "agent": "\(agentID)", "tracks": "\(open.tracks.map(\.label))",
                                                  "directory": "\(location.directory)"])
        return session
    }

    /// Re-attaches a live or dormant (found after a crash) session to a new connection.
    func resumeSession(_ id: SessionID, agentID: String, connection: UInt64) async throws(ProtocolError) -> (RecordingSession, SessionValidator.ResumePoint) {
        if let session = sessions[id] {
            guard session.agentID == agentID else { throw ProtocolError(.unknownSession, "no session \(id) for agent \(agentID)") }
            return (session, try await session.attach(connection: connection))
        }
        guard let sleeping = dormant[id], sleeping.record.agentID == agentID else {
            throw ProtocolError(.unknownSession, "no session \(id) to resume (never existed, finished, or expired)")
        }
        let open: SessionOpen
        let muxer: MP4Muxer
        let report: MP4Muxer.ResumeReport
        let settings: SessionSettings
        do {
            open = try Self.readSidecar(directory: sleeping.record.directory)
            // The session goes on with the settings it was started with.
            settings = try Self.readPinnedSettings(directory: sleeping.record.directory).map(self.settings.applying) ?? self.settings
            var configs: [TrackConfiguration] = []
            for d in open.tracks { configs.append(try TrackMapping.configuration(d)) }
            let baseName = try locate(agentID, id, sleeping.record.createdAt).baseName
            (muxer, report) = try MP4Muxer.resume(configuration: settings.muxerConfiguration(
                tracks: configs, directory: sleeping.record.directory, baseName: baseName,
                creationTime: Int64(sleeping.record.createdAt.timeIntervalSince1970)))
        } catch {
            throw ProtocolError(.storageFailure, "cannot reopen session \(id) after the restart: \(error.message)")
        }
        dormant[id] = nil
        let session = RecordingSession(id: id, agentID: agentID, open: open, directory: sleeping.record.directory,
                                       startedAt: sleeping.record.createdAt, muxer: muxer, acknowledged: report.durableThroughSequence,
                                       connection: connection, catalog: catalog, settings: settings, metrics: metrics, logger: logger)
        sessions[id] = session
        logger.notice("session resumed after a server restart", metadata: [
            "session": "\(id)", "file": "\(report.path)", "samples_in_file": "\(report.samplesInFile)",
            "acknowledged": "\(report.durableThroughSequence)", "torn_bytes_discarded": "\(report.bytesDiscarded)"])
        return (session, await session.resumePoint)
    }

    /// The session `agentID` records now (live or waiting for a resume), if any.
    func runningSessionID(of agentID: String) async -> String? {
        for session in sessions.values where session.agentID == agentID {
            if await !session.isFinished { return session.id.value }
        }
        return dormant.values.first { $0.record.agentID == agentID }?.record.id
    }

    /// Runs `send` (a StartSession to `agentID`) and returns the id of the next session that
    /// agent opens, or nil after ``startWait``.
    func awaitingNextSession(of agentID: String, send: @escaping @Sendable () async -> Void) async -> String? {
        nextWaiter += 1
        let token = nextWaiter
        return await withCheckedContinuation { continuation in
            startWaiters[token] = (agentID, continuation)
            Task {
                await send()
                try? await Task.sleep(for: Self.startWait)
                self.resolveStartWaiter(token, with: nil)
            }
        }
    }

    private func resolveStartWaiter(_ token: UInt64, with sessionID: String?) {
        startWaiters.removeValue(forKey: token)?.continuation.resume(returning: sessionID)
    }

    func sessionEnded(_ session: RecordingSession) {
        if sessions[session.id] === session { sessions[session.id] = nil }
    }

    /// Sessions unfinished in the catalog (the server died while they recorded) wait for
    /// their agents for one resume window, then are finalized as recovered.
    public func loadUnfinishedSessions() {
        let unfinished: [SessionRecord]
        do { unfinished = try catalog.unfinishedSessions() } catch {
            logger.error("cannot read the unfinished sessions from the catalog; none will be resumed or recovered", metadata: ["error": "\(error)"])
            metrics.catalogWriteFailed()
            unfinished = []
        }
        let deadline = clock.now + settings.resumeWindow
        for record in unfinished {
            guard let id = try? SessionID(validating: record.id) else { continue }
            dormant[id] = DormantSession(record: record, deadline: deadline)
            // Counted live while it waits: it ends either resumed-then-finished or recovered.
            metrics.sessionStarted()
            logger.notice("found an unfinished session from before the restart; waiting for its agent", metadata: ["session": "\(record.id)"])
        }
    }

    /// Finalizes sessions whose resume window has passed. Called periodically. The check and
    /// the finalize happen in one turn of the session's actor, so an agent resuming at that
    /// moment either gets its session back or finds it finished, never a session finalized
    /// under it.
    public func sweep() async {
        let now = clock.now
        for (id, session) in sessions where await session.expireIfAbandoned(now) {
            // Re-checked after the await: a session opened again under this id meanwhile stays.
            if sessions[id] === session { sessions[id] = nil }
        }
        for (id, sleeping) in dormant where now >= sleeping.deadline {
            dormant[id] = nil
            recoverDormant(sleeping.record)
        }
    }

    /// The unfinished sessions from before the restart that still wait for their agents.
    func dormantSessions() -> [SessionRecord] { dormant.values.map(\.record) }

    /// Removes a waiting session from the registry (an operator acts on it); nil when none.
    func takeDormant(_ id: String) -> SessionRecord? {
        guard let sid = try? SessionID(validating: id) else { return nil }
        return dormant.removeValue(forKey: sid)?.record
    }

    /// An operator cancelled a waiting session: its files are deleted, as a live cancel does.
    func discardDormant(_ record: SessionRecord, reason: String) {
        for recording in recordingsInCatalog(session: record.id) {
            try? FileManager.default.removeItem(atPath: recording.path)
            CatalogWrites.attempt("delete recording \(recording.id)", logger: logger, metrics: metrics) { try catalog.deleteRecording(id: recording.id) }
        }
        try? FileManager.default.removeItem(atPath: record.directory)
        CatalogWrites.attempt("session \(record.id)", logger: logger, metrics: metrics) {
            try catalog.updateSession(id: record.id, status: .cancelled, endedAt: Date(), error: reason)
        }
        metrics.sessionEnded(outcome: .cancelled)
        logger.notice("waiting session cancelled; recording discarded", metadata: ["session": "\(record.id)", "reason": "\(reason)"])
    }

    /// A session's recordings, or none (logged and counted) when the catalog cannot be read.
    private func recordingsInCatalog(session id: String) -> [RecordingRecord] {
        do { return try catalog.recordings(sessionID: id) } catch {
            logger.error("cannot read a session's recordings from the catalog", metadata: ["session": "\(id)", "error": "\(error)"])
            metrics.catalogWriteFailed()
            return []
        }
    }

    func recoverDormant(_ record: SessionRecord) {
        var finalized: [String] = []
        var failures: [String] = []
        for recording in recordingsInCatalog(session: record.id) where recording.status == .recording {
            do {
                let report = try MP4Recovery.recover(path: recording.path)
                var updated = recording
                updated.status = .recovered
                updated.sizeBytes = Int64(report.fileSize)
                updated.finishedAt = Date()
                CatalogWrites.attempt("recording \(updated.id)", logger: logger, metrics: metrics) { try catalog.upsertRecording(updated) }
                finalized.append(recording.path)
            } catch {
                failures.append("\(recording.path): \(error.message)")
                var updated = recording
                updated.status = .failed
                updated.error = error.message
                CatalogWrites.attempt("recording \(updated.id)", logger: logger, metrics: metrics) { try catalog.upsertRecording(updated) }
            }
        }
        let status: RecordingStatus = failures.isEmpty ? .recovered : .failed
        CatalogWrites.attempt("session \(record.id)", logger: logger, metrics: metrics) {
            try catalog.updateSession(id: record.id, status: status, endedAt: Date(), error: failures.isEmpty ? nil : failures.joined(separator: "; "))
        }
        CatalogReconciler(catalog: catalog, logger: logger, metrics: metrics).reconcile(sessionID: record.id)
        metrics.sessionEnded(outcome: status)
        logger.notice("unfinished session not resumed in time; finalized by recovery", metadata: [
            "session": "\(record.id)", "files": "\(finalized)", "failures": "\(failures)"])
    }

    /// Graceful shutdown: refuse new sessions, tell the agents to resume later, and suspend
    /// every live session (``RecordingSession/suspend()``) so that they resume into the same
    /// files after the restart. A session its agent closed already is finalized as usual.
    public func shutdown() async {
        isShuttingDown = true
        for link in agents.values {
            await link.send(.error(ErrorReport(code: .shuttingDown, scope: .connection, message: "the server is shutting down; resume later")))
        }
        for (id, session) in sessions {
            await session.suspend()
            sessions[id] = nil
        }
    }

    var liveSessionCount: Int { sessions.count }
    func allSessions() -> [RecordingSession] { Array(sessions.values) }
    func allAgentLinks() -> [AgentLink] { Array(agents.values) }
    func agentLink(_ id: String) -> AgentLink? { agents[id] }
    func session(_ id: SessionID) -> RecordingSession? { sessions[id] }
    var connectedAgentCount: Int { agents.count }

    func liveSessionIDs() -> Set<String> { Set(sessions.keys.map(\.value) + dormant.keys.map(\.value)) }

    func isLive(_ sessionID: String) -> Bool {
        guard let id = try? SessionID(validating: sessionID) else { return false }
        return sessions[id] != nil || dormant[id] != nil
    }

    // MARK: Sidecar

    /// The session's `SessionOpen` and pinned settings, kept beside its files so a restarted
    /// server can rebuild the session (tracks, codec configuration, segmenting) when the agent
    /// resumes it.
    static func writeSidecar(_ open: SessionOpen, settings: SessionSettings.Pinned, directory: String) throws {
        try writeDurably(Data(buffer: try FrameEncoder().encode(.sessionOpen(open))), to: directory + "/" + openFileName)
        try writeDurably(try JSONEncoder().encode(settings), to: directory + "/" + settingsFileName)
    }

    /// Write to a temporary file, fsync, rename: a crash leaves the old file or the new one.
    private static func writeDurably(_ data: Data, to path: String) throws {
        let temporary = path + ".tmp"
        FileManager.default.createFile(atPath: temporary, contents: data, attributes: [.posixPermissions: 0o600])
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: temporary))
        try handle.synchronize()
        try handle.close()
        try? FileManager.default.removeItem(atPath: path)
        try FileManager.default.moveItem(atPath: temporary, toPath: path)
    }

    /// The settings a session was started with; nil for a session from before they were pinned.
    /// A file that exists but cannot be read is an error, not a fallback: resuming with other
    /// settings is exactly what pinning prevents.
    static func readPinnedSettings(directory: String) throws -> SessionSettings.Pinned? {
        let path = directory + "/" + settingsFileName
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        do { return try JSONDecoder().decode(SessionSettings.Pinned.self, from: data) } catch {
            throw ProtocolError(.storageFailure, "\(path) is damaged (\(error)); the session cannot resume with its own settings")
        }
    }

    static func readSidecar(directory: String) throws -> SessionOpen {
        let data = try Data(contentsOf: URL(fileURLWithPath: directory + "/" + openFileName))
        var parser = MessageParser()
        parser.append(contentsOf: data)
        guard case .sessionOpen(let open)? = try parser.nextMessage() else {
            throw ProtocolError(.invalidField, "\(openFileName) does not hold a SessionOpen")
        }
        return open
    }
}

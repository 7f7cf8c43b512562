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
        var info: ConnectedAgentInfo
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
    /// Finished sessions to ask, at the next sweep, whether their catalog rows still need
    /// writing (``RecordingSession/repairCatalog()``); kept until they do not.
    private var owingCatalog: [RecordingSession] = []
    /// Sessions finished by recovery whose catalog rows could not all be written; recovery
    /// (idempotent) runs again at the next sweep.
    private var dormantOwingCatalog: [String: SessionRecord] = [:]
    private var agents: [String: AgentLink] = [:]
    private var nextConnection: UInt64 = 1
    /// Admin starts waiting for their agent to open the session (keyed by a token per wait).
    private var startWaiters: [UInt64: (agentID: String, continuation: CheckedContinuation<StartOutcome, Never>)] = [:]
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
        updateAgent(agentID, connection: connection) { info in
            info.lastSeen = Date()
            if let roundTripMillis { info.roundTripMillis = roundTripMillis }
            info.sessionID = sessionID
        }
    }

    /// Changes what the admin API shows of a connected agent, in place; `connection` (when
    /// given) must still be the agent's current one.
    private func updateAgent(_ agentID: String, connection: UInt64? = nil, _ change: (inout ConnectedAgentInfo) -> Void) {
        guard let current = agents[agentID], connection == nil || current.connection == connection else { return }
        change(&agents[agentID]!.info)
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
        for (token, waiter) in startWaiters where waiter.agentID == agentID { resolveStartWaiter(token, with: .opened(open.sessionID.value)) }
        updateAgent(agentID) { $0.captureFailure = nil }
        metrics.sessionStarted()
        logger.info("session opened", metadata: ["session": "\(open.sessionID)", "agent": "\(agentID)", "tracks": "\(open.tracks.map(\.label))",
                                                  "directory": "\(location.directory)"])
        return session
    }

    /// What a `SessionResume` gets.
    enum ResumeOutcome: Sendable {
        /// The session goes on from this point.
        case resumed(RecordingSession, SessionValidator.ResumePoint)
        /// The session had finished and told its agent so, but the agent never got the
        /// answer (protocol.md §6.7): it gets the same `SessionClosed` again.
        case alreadyClosed(SessionClosed)
    }

    /// Re-attaches a live or dormant (found after a crash) session to a new connection, or
    /// repeats the `SessionClosed` of one that finished meanwhile.
    func resumeSession(_ id: SessionID, agentID: String, connection: UInt64) async throws(ProtocolError) -> ResumeOutcome {
        if let session = sessions[id] {
            guard session.agentID == agentID else { throw ProtocolError(.unknownSession, "no session \(id) for agent \(agentID)") }
            do {
                return .resumed(session, try await session.attach(connection: connection))
            } catch where error.code == .unknownSession {
                // It finished a moment ago (the sweep expired it, not yet removed from `sessions`):
                // the same answer as once it is gone.
                if let closed = finishedSessionAnswer(id, agentID: agentID) { return .alreadyClosed(closed) }
                throw error
            }
        }
        guard let sleeping = dormant[id], sleeping.record.agentID == agentID else {
            if let closed = finishedSessionAnswer(id, agentID: agentID) { return .alreadyClosed(closed) }
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
        await session.adoptFiles(through: report.segmentIndex)
        logger.notice("session resumed after a server restart", metadata: [
            "session": "\(id)", "file": "\(report.path)", "samples_in_file": "\(report.samplesInFile)",
            "acknowledged": "\(report.durableThroughSequence)", "torn_bytes_discarded": "\(report.bytesDiscarded)"])
        return .resumed(session, await session.resumePoint)
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
        for session in sessions.values where session.agentID == agentID {
            if await !session.isFinished { return session.id.value }
        }
        return dormant.values.first { $0.record.agentID == agentID }?.record.id
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
        }
        for (token, waiter) in startWaiters where waiter.agentID == agentID { resolveStartWaiter(token, with: .refused(report)) }
    }

    func sessionEnded(_ session: RecordingSession) {
        if sessions[session.id] === session { sessions[session.id] = nil }
        owingCatalog.append(session)
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
                if (try? MP4Recovery.recover(path: recording.path)) == nil, FileManager.default.fileExists(atPath: recording.path) {
                    recording.error = "left fragmented: run recordctl recover \(recording.path)"
                }
                recording.status = record.status
                recording.finishedAt = record.endedAt ?? Date()
                CatalogWrites.attempt("recording \(recording.id)", logger: logger, metrics: metrics) { try catalog.upsertRecording(recording) }
            }
            CatalogReconciler(catalog: catalog, logger: logger, metrics: metrics).reconcile(sessionID: record.id)
            logger.notice("catalog rows of a finished session reconciled with its files at start-up", metadata: ["session": "\(record.id)"])
        }
    }

    /// Finalizes sessions whose resume window has passed. Called periodically. The check and
    /// the finalize happen in one turn of the session's actor, so an agent resuming at that
    /// moment either gets its session back or finds it finished, never a session finalized
    /// under it.
    public func sweep(now: ContinuousClock.Instant = .now) async {
        for (id, session) in sessions where await session.expireIfAbandoned(now) {
            // Re-checked after the await: a session opened again under this id meanwhile stays.
            if sessions[id] === session { sessions[id] = nil }
            owingCatalog.append(session)
        }
        for (id, sleeping) in dormant where now >= sleeping.deadline {
            dormant[id] = nil
            recoverDormant(sleeping.record)
        }
        await retryCatalogWrites()
    }

    /// Catalog writes that failed for finished sessions (a full disk, a busy database) are
    /// written again until they succeed: the catalog must end up saying what the files hold.
    private func retryCatalogWrites() async {
        var still: [RecordingSession] = []
        for session in owingCatalog where await !session.repairCatalog() { still.append(session) }
        owingCatalog = still
        for record in dormantOwingCatalog.values { recoverDormant(record, again: true) }
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

    /// Finalizes a waiting session's files by recovery and marks it `recovered` (or `failed`).
    /// Idempotent: `again` retries the catalog writes after one failed (nothing is counted twice).
    func recoverDormant(_ record: SessionRecord, again: Bool = false) {
        var finalized: [String] = []
        var failures: [String] = []
        var written = true
        let recordings: [RecordingRecord]
        do { recordings = try catalog.recordings(sessionID: record.id) } catch {
            // Without its rows the files are not known: try again at the next sweep.
            logger.error("cannot read a session's recordings from the catalog; its recovery is retried", metadata: [
                "session": "\(record.id)", "error": "\(error)"])
            metrics.catalogWriteFailed()
            if dormantOwingCatalog.updateValue(record, forKey: record.id) == nil, !again { metrics.sessionEnded(outcome: .recovered) }
            return
        }
        var emptied: [String] = []
        for recording in Self.withUnlistedFiles(recordings, of: record) where recording.status == .recording {
            do {
                let report = try MP4Recovery.recover(path: recording.path)
                var updated = recording
                updated.status = .recovered
                updated.sizeBytes = Int64(report.fileSize)
                updated.finishedAt = Date()
                written = CatalogWrites.attempt("recording \(updated.id)", logger: logger, metrics: metrics) {
                    try catalog.upsertRecording(updated)
                } && written
                finalized.append(recording.path)
            } catch where error.code == .noCompleteFragment {
                // Not one fragment became durable (the server died within the first second):
                // the file holds no media and nothing of it was acknowledged. It goes.
                RandomAccessFile.remove(recording.path)
                written = CatalogWrites.attempt("delete empty recording \(recording.id)", logger: logger, metrics: metrics) {
                    try catalog.deleteRecording(id: recording.id)
                } && written
                emptied.append(recording.path)
            } catch {
                failures.append("\(recording.path): \(error.message)")
                var updated = recording
                updated.status = .failed
                updated.error = error.message
                written = CatalogWrites.attempt("recording \(updated.id)", logger: logger, metrics: metrics) {
                    try catalog.upsertRecording(updated)
                } && written
            }
        }
        if finalized.isEmpty, failures.isEmpty, !emptied.isEmpty { failures.append("no fragment was ever durable: nothing was recorded") }
        let status: RecordingStatus = failures.isEmpty ? .recovered : .failed
        written = CatalogWrites.attempt("session \(record.id)", logger: logger, metrics: metrics) {
            try catalog.updateSession(id: record.id, status: status, endedAt: Date(), error: failures.isEmpty ? nil : failures.joined(separator: "; "))
        } && written
        written = CatalogReconciler(catalog: catalog, logger: logger, metrics: metrics).reconcile(sessionID: record.id) && written
        dormantOwingCatalog[record.id] = written ? nil : record
        guard !again else {
            if written { logger.notice("the recovered session's catalog rows are written after an earlier failure", metadata: ["session": "\(record.id)"]) }
            return
        }
        metrics.sessionEnded(outcome: status)
        logger.notice("unfinished session not resumed in time; finalized by recovery", metadata: [
            "session": "\(record.id)", "files": "\(finalized)", "removed_empty": "\(emptied)", "failures": "\(failures)"])
    }

    /// The session's recordings, plus a row (status `recording`) for each recording file in its
    /// directory that the catalog does not list: the server died between creating the file and
    /// writing its row, or the row's write failed.
    static func withUnlistedFiles(_ recordings: [RecordingRecord], of session: SessionRecord) -> [RecordingRecord] {
        guard let id = try? SessionID(validating: session.id),
              let names = try? FileManager.default.contentsOfDirectory(atPath: session.directory) else { return recordings }
        var all = recordings
        for name in names.sorted() where name.hasSuffix(".mp4") {
            let path = session.directory + "/" + name
            guard !all.contains(where: { $0.path == path }) else { continue }
            // `<base>.mp4` is the first file; `<base>-0002.mp4` the second (MuxerConfiguration.path(forSegment:)).
            let stem = name.dropLast(4)
            let number = stem.split(separator: "-").last.flatMap { $0.count == 4 ? Int($0) : nil } ?? 1
            all.append(RecordingRecord(id: RecordingSession.recordingID(id, number - 1), sessionID: session.id, agentID: session.agentID,
                                       segmentIndex: number - 1, path: path, status: .recording, createdAt: session.createdAt))
        }
        return all
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
            owingCatalog.append(session)
        }
        // A last try for catalog writes that failed; what still fails is reconciled at the next start.
        await retryCatalogWrites()
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

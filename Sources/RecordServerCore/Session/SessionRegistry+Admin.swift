import AdminModels
import Foundation
import Shared

/// The admin API's view of the registry: live state from the actors, history from the catalog.
extension SessionRegistry: AdminBackend {
    func health() async -> HealthInfo {
        HealthInfo(status: isShuttingDown ? "shutting_down" : "ok", version: ServerVersion.current,
                   uptimeSeconds: Date().timeIntervalSince(startedAt), connectedAgents: connectedAgentCount,
                   liveSessions: liveSessionCount, dataDirectory: dataDirectory, freeBytes: Self.freeBytes(dataDirectory))
    }

    func connectedAgents() async -> [ConnectedAgentInfo] {
        allAgentLinks().map(\.info).sorted { $0.id < $1.id }
    }

    func agentsSeen() async throws(AdminError) -> [OfflineAgent] {
        do {
            return try catalog.agents().map {
                OfflineAgent(id: $0.id, lastAddress: $0.lastAddress, softwareVersion: $0.softwareVersion, firstSeen: $0.firstSeen, lastSeen: $0.lastSeen)
            }
        } catch {
            throw AdminError(.unavailable, "catalog: \(error)")
        }
    }

    func fleet() async throws(AdminError) -> ServerListResponse {
        // Its own row is written now, so the answer shows this server as it is.
        recordHeartbeat()
        let now = Date()
        do {
            let rows = catalog.isShared ? try catalog.servers() : [heartbeatRow()]
            let servers = rows.map { s in
                FleetServer(id: s.id, ingestAddress: s.ingestAddress, softwareVersion: s.softwareVersion, startedAt: s.startedAt,
                            heartbeatAt: s.heartbeatAt, alive: now.timeIntervalSince(s.heartbeatAt) <= FleetServer.silenceBeforeDown,
                            liveSessions: s.liveSessions, connectedAgents: s.connectedAgents)
            }
            return ServerListResponse(this: catalog.serverID, servers: servers)
        } catch {
            throw AdminError(.unavailable, "catalog: \(error)")
        }
    }

    func liveSessions() async -> [LiveSessionInfo] {
        var result: [LiveSessionInfo] = []
        for session in allSessions() { result.append(await session.snapshot()) }
        return result.sorted { $0.startedAt < $1.startedAt }
    }

    /// Sends a StartSession and returns the new session's id, or nil when the agent has not
    /// opened it within ``startWait``. An agent that refuses (a camera that does not open)
    /// is a `conflict` that names its reason.
    func startSession(agentID: String, labels: [String: String]) async throws(AdminError) -> String? {
        let wireLabels = try Self.wireLabels(labels)
        // A start is idempotent: an agent that records already is left alone (issue 13, finding 3:
        // the command used to reach it and disturb the running session). That includes a session
        // waiting for its agent to come back (after a server restart or a network cut).
        if let running = await runningSessionID(of: agentID) {
            throw AdminError(.conflict, "agent \(agentID) is already recording session \(running); stop it first (recordctl stop \(running))",
                             sessionID: running)
        }
        guard pendingGroupID(of: agentID) == nil else { throw AdminError(.conflict, "agent \(agentID) is joining a session being started") }
        guard let link = agentLink(agentID) else { throw AdminError(.notFound, "agent \(agentID) is not connected") }
        let command = Message.startSession(StartSession(labels: wireLabels))
        switch await awaitingNextSession(of: agentID, send: { await link.send(command) }) {
        case .opened(let id): return id
        case .noAnswer: return nil
        case .refused(let report) where report.code == .captureFailed:
            throw AdminError(.conflict, "agent \(agentID) cannot capture: \(report.message)")
        case .refused(let report):
            throw AdminError(.conflict, "agent \(agentID) refused the start: \(report.message) (\(report.code))")
        }
    }

    func startSession(agentIDs: [String], labels: [String: String]) async throws(AdminError) -> String {
        guard agentIDs.count >= 2 else { throw AdminError(.badRequest, "a session across agents needs two agents or more") }
        return try await startGroupSession(agentIDs: agentIDs, labels: try Self.wireLabels(labels))
    }

    /// The labels as `StartSession` carries them, within the protocol's bounds: past them the
    /// command could not be encoded and the agent would never hear of the start.
    private static func wireLabels(_ labels: [String: String]) throws(AdminError) -> [Label] {
        let limits = ProtocolLimits.default
        guard labels.count <= limits.maxLabels else { throw AdminError(.badRequest, "\(labels.count) labels; at most \(limits.maxLabels)") }
        var wireLabels: [Label] = []
        for (key, value) in labels.sorted(by: { $0.key < $1.key }) {
            // The identifier's own error is replaced by one that names the label key.
            guard let k = try? Identifier(validating: key) else { throw AdminError(.badRequest, "label key \"\(key)\" is not a valid identifier") }
            guard value.utf8.count <= limits.maxStringBytes else {
                throw AdminError(.badRequest, "label \"\(key)\" is \(value.utf8.count) bytes long; at most \(limits.maxStringBytes)")
            }
            wireLabels.append(Label(k, value))
        }
        return wireLabels
    }

    /// Asks the agent to stop the session; with nobody to ask (the agent is away, or the
    /// session waits after a restart) the session finishes now, as the end of its resume
    /// window would finish it.
    /// Asks the agents to stop the session; with nobody to ask (the agents are away, or the
    /// session waits after a restart) the session finishes now, as the end of its resume
    /// window would finish it. Across agents, each attached agent is asked to stop its part,
    /// and the parts of agents that are away end now.
    func stopSession(id: String) async throws(AdminError) {
        let session = try liveSession(id)
        let links = await agentsAttached(to: session)
        guard !links.isEmpty else {
            await session.expire(as: .completed)
            await sessionEnded(session)
            return
        }
        await session.endAbsentMembers(reason: "stopped by an operator while its agent was away")
        // Across agents, every agent stops at one instant (protocol.md §6.17).
        let stops = session.isAcrossAgents
            ? zip(links, scheduled(links.map(\.0), lead: Self.stopLead) { $0 }).map { ($0.0.0, StopSession(sessionID: $0.0.1, stopAt: $0.1)) }
            : links.map { ($0.0, StopSession(sessionID: $0.1)) }
        for (link, command) in stops { await link.send(.stopSession(command)) }
    }

    func cancelSession(id: String) async throws(AdminError) {
        let session = try liveSession(id)
        let links = await agentsAttached(to: session)
        guard !links.isEmpty else {
            await session.cancel(reason: "cancelled by an operator")
            await sessionEnded(session)
            return
        }
        for (link, wireID) in links { await link.send(.cancelSession(CancelSession(sessionID: wireID, reason: "cancelled by an operator"))) }
    }

    /// The links of the session's agents that can act on it, with the id each knows it by:
    /// connected and attached (not one found after a restart that it has not resumed yet).
    private func agentsAttached(to session: RecordingSession) async -> [(AgentLink, SessionID)] {
        if case .dormant = await session.phase { return [] }
        let attached = await session.attachedMembers()
        return attached.compactMap { member in agentLink(member.agentID).map { ($0, member.wireID) } }
    }

    func recordings(_ filter: RecordingFilter) async throws(AdminError) -> [RecordingRecord] {
        do { return try catalog.recordings(filter).map(Self.withDurableFigures) } catch { throw AdminError(.unavailable, "catalog: \(error)") }
    }

    func recording(id: String) async throws(AdminError) -> (RecordingRecord, [TrackRecord]) {
        let record: RecordingRecord?
        do { record = try catalog.recording(id: id) } catch { throw AdminError(.unavailable, "catalog: \(error)") }
        guard let record else { throw AdminError(.notFound, "no recording \(id)") }
        return (Self.withDurableFigures(record), (try? catalog.tracks(sessionID: record.sessionID)) ?? [])
    }

    /// A file still being written has no size or duration in the catalog yet (they are
    /// written, read back from the file, when it is finished). Until then they come from the
    /// file as it is on disk: what is durable so far — not 0 B and 0 s.
    /// A file that cannot be read right now (being created, torn mid-write) keeps the row as it is:
    /// this is a display, and the finished file is read back into the catalog anyway.
    static func withDurableFigures(_ record: RecordingRecord) -> RecordingRecord {
        guard record.status == .recording, let inspection = try? MP4Inspection.inspect(path: record.path) else { return record }
        var live = record
        live.sizeBytes = Int64(inspection.fileSize)
        live.durationSeconds = inspection.durationSeconds
        return live
    }

    func deleteRecording(id: String) async throws(AdminError) {
        let (record, _) = try await recording(id: id)
        guard !isLive(record.sessionID) else { throw AdminError(.conflict, "recording \(id) is still being written; stop or cancel its session first") }
        do {
            if FileManager.default.fileExists(atPath: record.path) { try FileManager.default.removeItem(atPath: record.path) }
            try catalog.deleteRecording(id: id)
        } catch {
            throw AdminError(.unavailable, "could not delete \(record.path): \(error)")
        }
        // The session's last file gone: its directory (with the session.mcrp sidecar) goes too.
        if (try? catalog.recordings(sessionID: record.sessionID))?.isEmpty == true,
           let session = try? catalog.session(id: record.sessionID) {
            do { try FileManager.default.removeItem(atPath: session.directory) } catch {
                // The recording itself is gone; a leftover directory is only clutter.
                logger.warning("could not remove the session directory", metadata: ["directory": "\(session.directory)", "error": "\(error)"])
            }
        }
    }

    func storedRecording(id: String) async throws(AdminError) -> UploadRecord? {
        do { return try catalog.upload(recordingID: id) } catch { throw AdminError(.unavailable, "catalog: \(error)") }
    }

    func forgetUpload(recordingID: String) async throws(AdminError) {
        do { try catalog.deleteUpload(recordingID: recordingID) } catch { throw AdminError(.unavailable, "catalog: \(error)") }
    }

    func finishedRecordingFile(id: String) async throws(AdminError) -> String {
        let (record, _) = try await recording(id: id)
        guard record.status != .recording, !isLive(record.sessionID) else {
            throw AdminError(.conflict, "recording \(id) is still being written; it can be downloaded once session \(record.sessionID) has ended",
                             sessionID: record.sessionID)
        }
        guard let file = Self.resolvedPath(record.path) else {
            throw AdminError(.notFound, "the file of recording \(id) is gone from disk (\(record.path))")
        }
        // Whatever a row or a symlink says, only files under the data directory are served.
        guard let root = Self.resolvedPath(dataDirectory), file.hasPrefix(root.hasSuffix("/") ? root : root + "/") else {
            throw AdminError(.notFound, "the file of recording \(id) is not inside the data directory")
        }
        return file
    }

    func exportSources(sessionID: String) async throws(AdminError) -> ExportSources {
        let session: SessionRecord?
        let files: [RecordingRecord]
        do {
            session = try catalog.session(id: sessionID)
            files = try catalog.recordings(sessionID: sessionID)
        } catch {
            throw AdminError(.unavailable, "catalog: \(error)")
        }
        guard let session else { throw AdminError(.notFound, "no session \(sessionID)") }
        let root = Self.resolvedPath(dataDirectory).map { $0.hasSuffix("/") ? $0 : $0 + "/" }
        let sources = files.sorted { $0.segmentIndex < $1.segmentIndex }.compactMap { record -> SessionExport.Source? in
            // The same containment as a download: only files under the data directory are read.
            guard let root, let path = Self.resolvedPath(record.path), path.hasPrefix(root) else { return nil }
            return SessionExport.Source(path: path, isLive: record.status == .recording)
        }
        return ExportSources(sessionID: sessionID, agentID: session.agentID, startedAt: session.createdAt, isLive: isLive(sessionID),
                             sources: sources)
    }

    /// The path with every symlink, `.` and `..` resolved; nil when it does not exist.
    static func resolvedPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    func subscribeEvents() async -> EventBroadcaster.Subscription? { events.subscribe() }

    private func liveSession(_ id: String) throws(AdminError) -> RecordingSession {
        guard let sid = try? SessionID(validating: id), let session = session(sid) else {
            throw AdminError(.notFound, "no live session \(id)")
        }
        return session
    }

    static func freeBytes(_ path: String) -> Int64 {
        var s = statvfs()
        guard statvfs(path, &s) == 0 else { return -1 }
        return Int64(s.f_bavail) * Int64(s.f_frsize)
    }
}

enum ServerVersion {
    static let current = "0.1.0"
}

import Foundation
import GRDB

/// The recording catalog: agents, sessions, recordings (files) and tracks in SQLite, through
/// GRDB. On disk it is `<dataDir>/catalog.sqlite` in WAL mode (a `DatabasePool`), so the admin
/// API can read while ingest writes; in tests it lives in memory.
///
/// The catalog is an index of the files, not their source of truth: every call is a small,
/// synchronous transaction, and ingest treats catalog failures as non-fatal. All errors are
/// `CatalogError`.
public final class Catalog: RecordingCatalog, Sendable {
    /// The database file, or nil for an in-memory catalog.
    public let path: String?
    let serverID: String
    /// The file is this server's alone (its data directory is locked).
    var isShared: Bool { false }
    private let database: any DatabaseWriter

    /// Opens (creating if needed) the catalog at `path` and migrates it to the current schema.
    ///
    /// The file and its `-wal`/`-shm` companions are made mode 0600: the catalog names every
    /// agent, label and path, which is nobody else's business. The containing directory must
    /// exist (`StorageLayout.prepare()` creates the data directory).
    /// - Throws: `CatalogError` `.openFailed`, `.migrationFailed` or `.newerSchema`.
    public init(path: String, serverID: String = "local") throws(CatalogError) {
        // Create the file ourselves so it never exists with looser permissions, even briefly.
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let code = errno
            throw CatalogError(.openFailed, "cannot create or open \(path); check that its directory exists and is writable",
                               underlying: String(cString: strerror(code)))
        }
        let chmodResult = fchmod(fd, 0o600)
        let chmodErrno = errno
        close(fd)
        guard chmodResult == 0 else {
            throw CatalogError(.openFailed, "cannot set mode 0600 on \(path)", underlying: String(cString: strerror(chmodErrno)))
        }

        var configuration = Configuration()
        // Another process (recordctl, a backup) may hold the write lock briefly; wait, don't fail.
        configuration.busyMode = .timeout(5)
        configuration.label = "catalog"
        let pool: DatabasePool
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
        } catch {
            throw CatalogError(.openFailed, "cannot open \(path) as an SQLite database", underlying: "\(error)")
        }
        self.path = path
        self.serverID = serverID
        self.database = pool
        try migrate()
        // SQLite gives -wal and -shm the main file's mode; we check rather than trust it.
        for suffix in ["-wal", "-shm"] {
            let companion = path + suffix
            if chmod(companion, 0o600) != 0, errno != ENOENT {
                throw CatalogError(.openFailed, "cannot set mode 0600 on \(companion)", underlying: String(cString: strerror(errno)))
            }
        }
    }

    /// A fresh catalog in memory, for tests. Same schema and behaviour, nothing on disk.
    static func inMemory(serverID: String = "local") throws(CatalogError) -> Catalog {
        let queue: DatabaseQueue
        do { queue = try DatabaseQueue() } catch {
            throw CatalogError(.openFailed, "cannot create an in-memory database", underlying: "\(error)")
        }
        return try Catalog(database: queue, serverID: serverID)
    }

    private init(database: any DatabaseWriter, serverID: String) throws(CatalogError) {
        self.path = nil
        self.serverID = serverID
        self.database = database
        try migrate()
    }

    private func migrate() throws(CatalogError) {
        let migrator = CatalogSchema.migrator
        let superseded: Bool
        do { superseded = try database.read { try migrator.hasBeenSuperseded($0) } } catch {
            throw CatalogError(.migrationFailed, "cannot read the schema version of \(path ?? "the in-memory catalog")", underlying: "\(error)")
        }
        guard !superseded else {
            throw CatalogError(.newerSchema, "\(path ?? "the catalog") was written by a newer record-server; " +
                               "run that version, or restore a backup made by this one")
        }
        do { try migrator.migrate(database) } catch {
            throw CatalogError(.migrationFailed, "cannot bring \(path ?? "the catalog") up to the current schema", underlying: "\(error)")
        }
    }

    // MARK: Agents

    /// Inserts the agent or updates its address, version and last-seen time. `firstSeen`
    /// keeps the earliest value ever recorded, `lastSeen` the latest.
    func recordAgentSeen(_ agent: AgentRecord) throws(CatalogError) {
        try write("record agent \(agent.id)") { db in
            try db.execute(sql: """
                INSERT INTO agents (id, lastAddress, softwareVersion, firstSeen, lastSeen) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT(id) DO UPDATE SET
                    lastAddress = excluded.lastAddress,
                    softwareVersion = excluded.softwareVersion,
                    firstSeen = MIN(firstSeen, excluded.firstSeen),
                    lastSeen = MAX(lastSeen, excluded.lastSeen)
                """, arguments: [agent.id, agent.lastAddress, agent.softwareVersion, Self.seconds(agent.firstSeen), Self.seconds(agent.lastSeen)])
        }
    }

    /// Every agent ever seen, by id.
    public func agents() throws(CatalogError) -> [AgentRecord] {
        try read("list agents") { db in
            try AgentRecord.order(Column("id")).fetchAll(db)
        }
    }

    // MARK: Sessions

    /// Inserts a new session. - Throws: `.conflict` when the id already exists.
    func insertSession(_ session: SessionRecord) throws(CatalogError) {
        var stamped = session
        stamped.serverID = session.serverID ?? serverID
        try write("insert session \(session.id)") { db in try stamped.insert(db) }
    }

    public func session(id: String) throws(CatalogError) -> SessionRecord? {
        try read("read session \(id)") { db in
            try SessionRecord.fetchOne(db, key: id)
        }
    }

    /// Sets a session's status, end time, error and durable point. - Throws: `.notFound` for an unknown id.
    func updateSession(id: String, status: RecordingStatus, endedAt: Date?, error: String?,
                              durableSequence: UInt64?) throws(CatalogError) {
        // SQLite integers are signed 64-bit; sequence numbers stay far below 2^63.
        let durable = durableSequence.map { Int64(clamping: $0) }
        try write("update session \(id)") { db in
            try db.execute(sql: "UPDATE sessions SET status = ?, endedAt = ?, error = ?, durableSequence = ? WHERE id = ?",
                           arguments: [status.rawValue, endedAt.map(Self.seconds), error, durable, id])
            guard db.changesCount > 0 else { throw CatalogError(.notFound, "no session \(id) to update") }
        }
    }

    /// Removes a session with its tracks and recordings (the caller deletes the files first):
    /// for a session that never recorded anything and so leaves nothing behind.
    func deleteSession(id: String) throws(CatalogError) {
        try write("delete session \(id)") { db in
            try db.execute(sql: "DELETE FROM tracks WHERE sessionID = ?", arguments: [id])
            try db.execute(sql: "DELETE FROM recordings WHERE sessionID = ?", arguments: [id])
            try db.execute(sql: "DELETE FROM sessions WHERE id = ?", arguments: [id])
        }
    }

    func finishedSessionsWithStaleRows() throws(CatalogError) -> [SessionRecord] {
        try read("list finished sessions with stale rows") { db in
            try SessionRecord.fetchAll(db, sql: """
                SELECT * FROM sessions s WHERE s.status NOT IN (?, ?) AND (s.serverID = ? OR s.serverID IS NULL) AND (
                    EXISTS (SELECT 1 FROM recordings r WHERE r.sessionID = s.id AND r.status = ?)
                    OR EXISTS (SELECT 1 FROM tracks t WHERE t.sessionID = s.id AND t.status = ?))
                ORDER BY createdAt, id
                """, arguments: [RecordingStatus.recording.rawValue, RecordingStatus.cancelled.rawValue, serverID,
                                 RecordingStatus.recording.rawValue, TrackStatus.active.rawValue])
        }
    }

    /// Sessions still marked `recording`, oldest first: after a crash these wait for their
    /// agents to resume them or for recovery.
    func unfinishedSessions() throws(CatalogError) -> [SessionRecord] {
        try read("list unfinished sessions") { db in
            try SessionRecord.fetchAll(db, sql: """
                SELECT * FROM sessions WHERE status = ? AND (serverID = ? OR serverID IS NULL) ORDER BY createdAt, id
                """, arguments: [RecordingStatus.recording.rawValue, serverID])
        }
    }

    // MARK: Recordings

    /// Inserts the recording or replaces every field of the row with the same id.
    func upsertRecording(_ recording: RecordingRecord) throws(CatalogError) {
        try write("save recording \(recording.id)") { db in try recording.upsert(db) }
    }

    public func recording(id: String) throws(CatalogError) -> RecordingRecord? {
        try read("read recording \(id)") { db in
            try RecordingRecord.fetchOne(db, key: id)
        }
    }

    /// Recordings matching every non-nil filter field, newest first (then by session and
    /// segment). `since` is inclusive and `until` exclusive, both on `createdAt`; a limit of
    /// zero or less returns nothing.
    public func recordings(_ filter: RecordingFilter) throws(CatalogError) -> [RecordingRecord] {
        var conditions: [String] = []
        var arguments = StatementArguments()
        if let agentID = filter.agentID {
            conditions.append("agentID = ?")
            arguments += [agentID]
        }
        if let status = filter.status {
            conditions.append("status = ?")
            arguments += [status.rawValue]
        }
        if let since = filter.since {
            conditions.append("createdAt >= ?")
            arguments += [Self.seconds(since)]
        }
        if let until = filter.until {
            conditions.append("createdAt < ?")
            arguments += [Self.seconds(until)]
        }
        if let label = filter.label {
            // A session's labels are one JSON object (encodeLabels); json_each walks its keys,
            // whatever characters they hold.
            let value = label.value == nil ? "" : " AND j.value = ?"
            conditions.append("EXISTS (SELECT 1 FROM sessions s, json_each(s.labels) j WHERE s.id = recordings.sessionID AND j.key = ?\(value))")
            arguments += [label.key]
            if let wanted = label.value { arguments += [wanted] }
        }
        arguments += [max(0, filter.limit)]
        let whereClause = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        let sql = "SELECT * FROM recordings \(whereClause) ORDER BY createdAt DESC, sessionID, segmentIndex LIMIT ?"
        return try read("list recordings") { db in
            try RecordingRecord.fetchAll(db, sql: sql, arguments: arguments)
        }
    }

    /// A session's files in segment order.
    public func recordings(sessionID: String) throws(CatalogError) -> [RecordingRecord] {
        try read("list recordings of session \(sessionID)") { db in
            try RecordingRecord.fetchAll(db, sql: "SELECT * FROM recordings WHERE sessionID = ? ORDER BY segmentIndex",
                                         arguments: [sessionID])
        }
    }

    /// Removes the row; the caller deletes the file first. Deleting an id that is not there
    /// is not an error, so a retried deletion succeeds.
    func deleteRecording(id: String) throws(CatalogError) {
        try write("delete recording \(id)") { db in
            try db.execute(sql: "DELETE FROM recordings WHERE id = ?", arguments: [id])
        }
    }

    // MARK: Retention support

    /// The sum of `sizeBytes` over this server's recordings on its disk, live ones included.
    func totalRecordingBytes() throws(CatalogError) -> Int64 {
        try read("sum recording sizes") { db in
            try Int64.fetchOne(db, sql: """
                SELECT COALESCE(SUM(r.sizeBytes), 0) FROM recordings r LEFT JOIN sessions s ON s.id = r.sessionID
                WHERE (s.serverID = ? OR s.serverID IS NULL)
                  AND NOT EXISTS (SELECT 1 FROM uploads u WHERE u.recordingID = r.id AND u.localRemoved <> 0)
                """, arguments: [serverID]) ?? 0
        }
    }

    /// This server's finished recordings (any status but `recording`), oldest first: by
    /// `createdAt`, then session and segment, so a session's segments go in order. `offset`
    /// skips rows the caller decided to keep, for paging through a pass that deletes as it goes.
    func oldestFinishedRecordings(limit: Int, offset: Int) throws(CatalogError) -> [RecordingRecord] {
        try read("list finished recordings") { db in
            try RecordingRecord.fetchAll(db, sql: """
                SELECT r.* FROM recordings r LEFT JOIN sessions s ON s.id = r.sessionID
                WHERE r.status <> ? AND (s.serverID = ? OR s.serverID IS NULL)
                ORDER BY r.createdAt, r.sessionID, r.segmentIndex LIMIT ? OFFSET ?
                """, arguments: [RecordingStatus.recording.rawValue, serverID, max(0, limit), max(0, offset)])
        }
    }

    // MARK: Tracks

    /// Inserts the track or replaces the row with the same session and track id.
    func upsertTrack(_ track: TrackRecord) throws(CatalogError) {
        try write("save track \(track.trackID) of session \(track.sessionID)") { db in try track.upsert(db) }
    }

    /// A session's tracks by track id.
    public func tracks(sessionID: String) throws(CatalogError) -> [TrackRecord] {
        try read("list tracks of session \(sessionID)") { db in
            try TrackRecord.fetchAll(db, sql: "SELECT * FROM tracks WHERE sessionID = ? ORDER BY trackID", arguments: [sessionID])
        }
    }

    // MARK: Uploads

    func recordingsAwaitingUpload(limit: Int) throws(CatalogError) -> [RecordingRecord] {
        try read("list recordings awaiting upload") { db in
            try RecordingRecord.fetchAll(db, sql: """
                SELECT r.* FROM recordings r JOIN sessions s ON s.id = r.sessionID
                WHERE r.status <> ? AND (s.serverID = ? OR s.serverID IS NULL)
                  AND NOT EXISTS (SELECT 1 FROM uploads u WHERE u.recordingID = r.id)
                ORDER BY r.createdAt, r.sessionID, r.segmentIndex LIMIT ?
                """, arguments: [RecordingStatus.recording.rawValue, serverID, max(0, limit)])
        }
    }

    func recordUpload(_ upload: UploadRecord) throws(CatalogError) {
        try write("record the upload of \(upload.recordingID)") { db in try upload.upsert(db) }
    }

    public func upload(recordingID: String) throws(CatalogError) -> UploadRecord? {
        try read("read the upload of \(recordingID)") { db in try UploadRecord.fetchOne(db, key: recordingID) }
    }

    func deleteUpload(recordingID: String) throws(CatalogError) {
        try write("delete the upload of \(recordingID)") { db in
            try db.execute(sql: "DELETE FROM uploads WHERE recordingID = ?", arguments: [recordingID])
        }
    }

    func uploadsOfDeletedRecordings(limit: Int) throws(CatalogError) -> [UploadRecord] {
        try read("list uploads of deleted recordings") { db in
            try UploadRecord.fetchAll(db, sql: """
                SELECT * FROM uploads u WHERE NOT EXISTS (SELECT 1 FROM recordings r WHERE r.id = u.recordingID)
                ORDER BY u.uploadedAt, u.recordingID LIMIT ?
                """, arguments: [max(0, limit)])
        }
    }

    // MARK: Servers

    func recordHeartbeat(_ server: ServerRecord) throws(CatalogError) {
        try write("record the heartbeat of server \(server.id)") { db in try server.upsert(db) }
    }

    public func servers() throws(CatalogError) -> [ServerRecord] {
        try read("list servers") { db in try ServerRecord.order(Column("id")).fetchAll(db) }
    }

    // MARK: Leases

    func claimSession(id: String, from owner: String?, leaseCutoff: Date, directory: String) throws(CatalogError) -> Int? {
        try write("take session \(id) over") { db -> Int? in
            if let owner, let beat = try Double.fetchOne(db, sql: "SELECT heartbeatAt FROM servers WHERE id = ?", arguments: [owner]),
               beat >= Self.seconds(leaseCutoff) { return nil }
            guard let old = try String.fetchOne(db, sql: "SELECT directory FROM sessions WHERE id = ? AND serverID IS ?", arguments: [id, owner]) else {
                return nil
            }
            try db.execute(sql: """
                UPDATE sessions SET serverID = ?, directory = ?, status = ?, endedAt = NULL, error = NULL, durableSequence = NULL WHERE id = ?
                """, arguments: [serverID, directory, RecordingStatus.recording.rawValue, id])
            try db.execute(sql: """
                UPDATE recordings SET path = ? || substr(path, ?) WHERE sessionID = ? AND substr(path, 1, ?) = ?
                """, arguments: [directory, old.count + 1, id, old.count + 1, old + "/"])
            try db.execute(sql: """
                INSERT INTO session_leases (sessionID, epoch, claimedAt) VALUES (?, 1, ?)
                ON CONFLICT(sessionID) DO UPDATE SET epoch = epoch + 1, claimedAt = excluded.claimedAt
                """, arguments: [id, Self.seconds(Date())])
            return try Int.fetchOne(db, sql: "SELECT epoch FROM session_leases WHERE sessionID = ?", arguments: [id])
        }
    }

    func sessionsOfSilentServers(since cutoff: Date) throws(CatalogError) -> [SessionRecord] {
        try read("list the sessions of silent servers") { db in
            try SessionRecord.fetchAll(db, sql: """
                SELECT s.* FROM sessions s JOIN servers v ON v.id = s.serverID
                WHERE s.status = ? AND s.serverID <> ? AND v.heartbeatAt < ? ORDER BY s.createdAt, s.id
                """, arguments: [RecordingStatus.recording.rawValue, serverID, Self.seconds(cutoff)])
        }
    }

    func sessionEpoch(id: String) throws(CatalogError) -> Int {
        try read("read the epoch of session \(id)") { db in
            try Int.fetchOne(db, sql: "SELECT epoch FROM session_leases WHERE sessionID = ?", arguments: [id]) ?? 0
        }
    }

    // MARK: Plumbing

    private func write<T>(_ operation: String, _ body: (Database) throws -> T) throws(CatalogError) -> T {
        do { return try database.write(body) } catch { throw Self.wrap(error, operation) }
    }

    private func read<T>(_ operation: String, _ body: (Database) throws -> T) throws(CatalogError) -> T {
        do { return try database.read(body) } catch { throw Self.wrap(error, operation) }
    }

    private static func wrap(_ error: any Error, _ operation: String) -> CatalogError {
        if let error = error as? CatalogError { return error }
        // A row the models cannot be read from: an unknown status, labels that are not a JSON
        // object of strings, a negative durable point.
        if error is RowDecodingError || error is DecodingError {
            return CatalogError(.corruptRow, "cannot \(operation): a row does not hold what the catalog writes", underlying: "\(error)")
        }
        if let error = error as? DatabaseError {
            if error.resultCode == .SQLITE_CONSTRAINT {
                return CatalogError(.conflict, "cannot \(operation): a row with the same id already exists", underlying: error.description)
            }
            return CatalogError(.queryFailed, "cannot \(operation)", underlying: error.description)
        }
        return CatalogError(.queryFailed, "cannot \(operation)", underlying: "\(error)")
    }

    private static func seconds(_ date: Date) -> Double { date.timeIntervalSince1970 }
}

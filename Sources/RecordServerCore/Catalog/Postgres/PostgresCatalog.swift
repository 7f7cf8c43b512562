import Foundation
import Logging
import PostgresNIO

/// The recording catalog in PostgreSQL (`--catalog postgresql://…`): the same rows, queries and
/// answers as the embedded SQLite `Catalog` (`CatalogTests` runs against both), for servers that
/// share one catalog. Schema: `PostgresCatalogSchema`; connection: `PostgresCatalogConnection`.
/// All errors are `CatalogError`.
public final class PostgresCatalog: RecordingCatalog, Sendable {
    let connection: PostgresCatalogConnection
    let serverID: String
    var isShared: Bool { true }

    /// Connects, migrates the database to the current schema and keeps the connection.
    /// - Throws: `CatalogError` `.openFailed` (cannot connect or authenticate), `.newerSchema`,
    ///   `.migrationFailed`.
    init(address: PostgresCatalogAddress, serverID: String = "local", logger: Logger) throws(CatalogError) {
        self.serverID = serverID
        connection = PostgresCatalogConnection(address: address, logger: logger)
        try PostgresCatalogSchema.migrate(connection)
    }

    // MARK: Agents

    func recordAgentSeen(_ agent: AgentRecord) throws(CatalogError) {
        try run("record agent \(agent.id)", """
            INSERT INTO agents ("id", "lastAddress", "softwareVersion", "firstSeen", "lastSeen")
            VALUES (\(agent.id), \(agent.lastAddress), \(agent.softwareVersion), \(Self.seconds(agent.firstSeen)), \(Self.seconds(agent.lastSeen)))
            ON CONFLICT ("id") DO UPDATE SET
                "lastAddress" = EXCLUDED."lastAddress",
                "softwareVersion" = EXCLUDED."softwareVersion",
                "firstSeen" = LEAST(agents."firstSeen", EXCLUDED."firstSeen"),
                "lastSeen" = GREATEST(agents."lastSeen", EXCLUDED."lastSeen")
            """)
    }

    public func agents() throws(CatalogError) -> [AgentRecord] {
        try fetch("list agents", #"SELECT \#(unescaped: PostgresCatalogRows.agentColumns) FROM agents ORDER BY "id""#,
                  PostgresCatalogRows.agent)
    }

    // MARK: Sessions

    func insertSession(_ session: SessionRecord) throws(CatalogError) {
        let labels = try PostgresCatalogRows.encodeLabels(session.labels)
        try run("insert session \(session.id)", """
            INSERT INTO sessions ("id", "agentID", "labels", "status", "createdAt", "endedAt", "error", "directory", "durableSequence", "serverID")
            VALUES (\(session.id), \(session.agentID), \(labels), \(session.status.rawValue), \(Self.seconds(session.createdAt)),
                    \(session.endedAt.map(Self.seconds)), \(session.error), \(session.directory), \(session.durableSequence.map { Int64(clamping: $0) }),
                    \(session.serverID ?? serverID))
            """)
    }

    public func session(id: String) throws(CatalogError) -> SessionRecord? {
        try fetch("read session \(id)", #"SELECT \#(unescaped: PostgresCatalogRows.sessionColumns) FROM sessions WHERE "id" = \#(id)"#,
                  PostgresCatalogRows.session).first
    }

    func updateSession(id: String, status: RecordingStatus, endedAt: Date?, error: String?, durableSequence: UInt64?) throws(CatalogError) {
        let changed = try run("update session \(id)", """
            UPDATE sessions SET "status" = \(status.rawValue), "endedAt" = \(endedAt.map(Self.seconds)), "error" = \(error),
                "durableSequence" = \(durableSequence.map { Int64(clamping: $0) }) WHERE "id" = \(id)
            """)
        guard changed > 0 else { throw CatalogError(.notFound, "no session \(id) to update") }
    }

    func deleteSession(id: String) throws(CatalogError) {
        let operation = "delete session \(id)"
        try connection.withSession(operation) { (session) throws(CatalogError) in
            try session.transaction(operation) { () throws(CatalogError) in
                try session.run(operation, #"DELETE FROM tracks WHERE "sessionID" = \#(id)"#)
                try session.run(operation, #"DELETE FROM recordings WHERE "sessionID" = \#(id)"#)
                try session.run(operation, #"DELETE FROM sessions WHERE "id" = \#(id)"#)
            }
        }
    }

    func finishedSessionsWithStaleRows() throws(CatalogError) -> [SessionRecord] {
        let (recording, cancelled, active) = (RecordingStatus.recording.rawValue, RecordingStatus.cancelled.rawValue, TrackStatus.active.rawValue)
        return try fetch("list finished sessions with stale rows", #"""
            SELECT \#(unescaped: PostgresCatalogRows.sessionColumns) FROM sessions s WHERE s."status" NOT IN (\#(recording), \#(cancelled))
                AND (s."serverID" = \#(serverID) OR s."serverID" IS NULL) AND (
                EXISTS (SELECT 1 FROM recordings r WHERE r."sessionID" = s."id" AND r."status" = \#(recording))
                OR EXISTS (SELECT 1 FROM tracks t WHERE t."sessionID" = s."id" AND t."status" = \#(active)))
            ORDER BY s."createdAt", s."id"
            """#, PostgresCatalogRows.session)
    }

    func unfinishedSessions() throws(CatalogError) -> [SessionRecord] {
        try fetch("list unfinished sessions", #"""
            SELECT \#(unescaped: PostgresCatalogRows.sessionColumns) FROM sessions WHERE "status" = \#(RecordingStatus.recording.rawValue)
                AND ("serverID" = \#(serverID) OR "serverID" IS NULL)
            ORDER BY "createdAt", "id"
            """#, PostgresCatalogRows.session)
    }

    // MARK: Recordings

    func upsertRecording(_ r: RecordingRecord) throws(CatalogError) {
        try run("save recording \(r.id)", """
            INSERT INTO recordings ("id", "sessionID", "agentID", "segmentIndex", "path", "status", "sizeBytes", "durationSeconds",
                                    "startSeconds", "createdAt", "finishedAt", "error")
            VALUES (\(r.id), \(r.sessionID), \(r.agentID), \(Int64(r.segmentIndex)), \(r.path), \(r.status.rawValue), \(r.sizeBytes),
                    \(r.durationSeconds), \(r.startSeconds), \(Self.seconds(r.createdAt)), \(r.finishedAt.map(Self.seconds)), \(r.error))
            ON CONFLICT ("id") DO UPDATE SET
                "sessionID" = EXCLUDED."sessionID", "agentID" = EXCLUDED."agentID", "segmentIndex" = EXCLUDED."segmentIndex",
                "path" = EXCLUDED."path", "status" = EXCLUDED."status", "sizeBytes" = EXCLUDED."sizeBytes",
                "durationSeconds" = EXCLUDED."durationSeconds", "startSeconds" = EXCLUDED."startSeconds",
                "createdAt" = EXCLUDED."createdAt", "finishedAt" = EXCLUDED."finishedAt", "error" = EXCLUDED."error"
            """)
    }

    public func recording(id: String) throws(CatalogError) -> RecordingRecord? {
        try fetch("read recording \(id)", #"SELECT \#(unescaped: PostgresCatalogRows.recordingColumns) FROM recordings WHERE "id" = \#(id)"#,
                  PostgresCatalogRows.recording).first
    }

    public func recordings(_ filter: RecordingFilter) throws(CatalogError) -> [RecordingRecord] {
        var conditions: [String] = []
        var binds = PostgresBindings()
        func bind(_ value: some PostgresNonThrowingEncodable) -> String {
            binds.append(value)
            return "$\(binds.count)"
        }
        if let agentID = filter.agentID { conditions.append(#""agentID" = \#(bind(agentID))"#) }
        if let status = filter.status { conditions.append(#""status" = \#(bind(status.rawValue))"#) }
        if let since = filter.since { conditions.append(#""createdAt" >= \#(bind(Self.seconds(since)))"#) }
        if let until = filter.until { conditions.append(#""createdAt" < \#(bind(Self.seconds(until)))"#) }
        if let label = filter.label {
            // Labels are one JSON object per session (sorted keys); jsonb reads its keys,
            // whatever characters they hold.
            let key = bind(label.key)
            let value = label.value.map { #" AND (s."labels"::jsonb ->> \#(key)) = \#(bind($0))"# } ?? ""
            conditions.append(#"EXISTS (SELECT 1 FROM sessions s WHERE s."id" = recordings."sessionID" AND s."labels"::jsonb ? \#(key)\#(value))"#)
        }
        let limit = bind(Int64(max(0, filter.limit)))
        let whereClause = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        let sql = #"""
            SELECT \#(PostgresCatalogRows.recordingColumns) FROM recordings \#(whereClause)
            ORDER BY "createdAt" DESC, "sessionID", "segmentIndex" LIMIT \#(limit)
            """#
        return try fetch("list recordings", PostgresQuery(unsafeSQL: sql, binds: binds), PostgresCatalogRows.recording)
    }

    public func recordings(sessionID: String) throws(CatalogError) -> [RecordingRecord] {
        try fetch("list recordings of session \(sessionID)", #"""
            SELECT \#(unescaped: PostgresCatalogRows.recordingColumns) FROM recordings WHERE "sessionID" = \#(sessionID) ORDER BY "segmentIndex"
            """#, PostgresCatalogRows.recording)
    }

    func deleteRecording(id: String) throws(CatalogError) {
        try run("delete recording \(id)", #"DELETE FROM recordings WHERE "id" = \#(id)"#)
    }

    // MARK: Retention support

    func totalRecordingBytes() throws(CatalogError) -> Int64 {
        try fetch("sum recording sizes", #"""
            SELECT COALESCE(SUM(r."sizeBytes"), 0)::BIGINT FROM recordings r LEFT JOIN sessions s ON s."id" = r."sessionID"
            WHERE (s."serverID" = \#(serverID) OR s."serverID" IS NULL)
              AND NOT EXISTS (SELECT 1 FROM uploads u WHERE u."recordingID" = r."id" AND u."localRemoved")
            """#) { row in
            try row.decode(Int64.self)
        }.first ?? 0
    }

    func oldestFinishedRecordings(limit: Int, offset: Int) throws(CatalogError) -> [RecordingRecord] {
        try fetch("list finished recordings", #"""
            SELECT \#(unescaped: Self.recordingColumns(as: "r")) FROM recordings r LEFT JOIN sessions s ON s."id" = r."sessionID"
            WHERE r."status" <> \#(RecordingStatus.recording.rawValue) AND (s."serverID" = \#(serverID) OR s."serverID" IS NULL)
            ORDER BY r."createdAt", r."sessionID", r."segmentIndex" LIMIT \#(Int64(max(0, limit))) OFFSET \#(Int64(max(0, offset)))
            """#, PostgresCatalogRows.recording)
    }

    /// The recording columns qualified with a table alias, for queries that join.
    private static func recordingColumns(as alias: String) -> String {
        PostgresCatalogRows.recordingColumns.split(separator: ",").map { alias + "." + $0.trimmingCharacters(in: .whitespaces) }
            .joined(separator: ", ")
    }

    // MARK: Tracks

    func upsertTrack(_ t: TrackRecord) throws(CatalogError) {
        try run("save track \(t.trackID) of session \(t.sessionID)", """
            INSERT INTO tracks ("sessionID", "trackID", "label", "kind", "codec", "width", "height", "status", "samples", "bytes", "dropped", "error")
            VALUES (\(t.sessionID), \(Int64(t.trackID)), \(t.label), \(t.kind), \(t.codec), \(Int64(t.width)), \(Int64(t.height)),
                    \(t.status.rawValue), \(t.samples), \(t.bytes), \(t.dropped), \(t.error))
            ON CONFLICT ("sessionID", "trackID") DO UPDATE SET
                "label" = EXCLUDED."label", "kind" = EXCLUDED."kind", "codec" = EXCLUDED."codec", "width" = EXCLUDED."width",
                "height" = EXCLUDED."height", "status" = EXCLUDED."status", "samples" = EXCLUDED."samples", "bytes" = EXCLUDED."bytes",
                "dropped" = EXCLUDED."dropped", "error" = EXCLUDED."error"
            """)
    }

    public func tracks(sessionID: String) throws(CatalogError) -> [TrackRecord] {
        try fetch("list tracks of session \(sessionID)", #"""
            SELECT \#(unescaped: PostgresCatalogRows.trackColumns) FROM tracks WHERE "sessionID" = \#(sessionID) ORDER BY "trackID"
            """#, PostgresCatalogRows.track)
    }

    // MARK: Uploads

    func recordingsAwaitingUpload(limit: Int) throws(CatalogError) -> [RecordingRecord] {
        try fetch("list recordings awaiting upload", #"""
            SELECT \#(unescaped: Self.recordingColumns(as: "r")) FROM recordings r JOIN sessions s ON s."id" = r."sessionID"
            WHERE r."status" <> \#(RecordingStatus.recording.rawValue) AND (s."serverID" = \#(serverID) OR s."serverID" IS NULL)
              AND NOT EXISTS (SELECT 1 FROM uploads u WHERE u."recordingID" = r."id")
            ORDER BY r."createdAt", r."sessionID", r."segmentIndex" LIMIT \#(Int64(max(0, limit)))
            """#, PostgresCatalogRows.recording)
    }

    func recordUpload(_ u: UploadRecord) throws(CatalogError) {
        try run("record the upload of \(u.recordingID)", """
            INSERT INTO uploads ("recordingID", "objectKey", "etag", "sizeBytes", "uploadedAt", "localRemoved")
            VALUES (\(u.recordingID), \(u.objectKey), \(u.etag), \(u.sizeBytes), \(Self.seconds(u.uploadedAt)), \(u.localRemoved))
            ON CONFLICT ("recordingID") DO UPDATE SET "objectKey" = EXCLUDED."objectKey", "etag" = EXCLUDED."etag",
                "sizeBytes" = EXCLUDED."sizeBytes", "uploadedAt" = EXCLUDED."uploadedAt", "localRemoved" = EXCLUDED."localRemoved"
            """)
    }

    public func upload(recordingID: String) throws(CatalogError) -> UploadRecord? {
        try fetch("read the upload of \(recordingID)", #"""
            SELECT \#(unescaped: PostgresCatalogRows.uploadColumns) FROM uploads WHERE "recordingID" = \#(recordingID)
            """#, PostgresCatalogRows.upload).first
    }

    func deleteUpload(recordingID: String) throws(CatalogError) {
        try run("delete the upload of \(recordingID)", #"DELETE FROM uploads WHERE "recordingID" = \#(recordingID)"#)
    }

    func uploadsOfDeletedRecordings(limit: Int) throws(CatalogError) -> [UploadRecord] {
        try fetch("list uploads of deleted recordings", #"""
            SELECT \#(unescaped: PostgresCatalogRows.uploadColumns) FROM uploads u
            WHERE NOT EXISTS (SELECT 1 FROM recordings r WHERE r."id" = u."recordingID")
            ORDER BY u."uploadedAt", u."recordingID" LIMIT \#(Int64(max(0, limit)))
            """#, PostgresCatalogRows.upload)
    }

    // MARK: Servers

    func recordHeartbeat(_ s: ServerRecord) throws(CatalogError) {
        try run("record the heartbeat of server \(s.id)", """
            INSERT INTO servers ("id", "ingestAddress", "softwareVersion", "startedAt", "heartbeatAt", "liveSessions", "connectedAgents")
            VALUES (\(s.id), \(s.ingestAddress), \(s.softwareVersion), \(Self.seconds(s.startedAt)), \(Self.seconds(s.heartbeatAt)),
                    \(Int64(s.liveSessions)), \(Int64(s.connectedAgents)))
            ON CONFLICT ("id") DO UPDATE SET
                "ingestAddress" = EXCLUDED."ingestAddress", "softwareVersion" = EXCLUDED."softwareVersion", "startedAt" = EXCLUDED."startedAt",
                "heartbeatAt" = EXCLUDED."heartbeatAt", "liveSessions" = EXCLUDED."liveSessions", "connectedAgents" = EXCLUDED."connectedAgents"
            """)
    }

    public func servers() throws(CatalogError) -> [ServerRecord] {
        try fetch("list servers", #"SELECT \#(unescaped: PostgresCatalogRows.serverColumns) FROM servers ORDER BY "id""#, PostgresCatalogRows.server)
    }

    // MARK: Leases

    func claimSession(id: String, from owner: String?, leaseCutoff: Date, directory: String) throws(CatalogError) -> Int? {
        let operation = "take session \(id) over"
        let me = serverID
        return try connection.withSession(operation) { (session) throws(CatalogError) -> Int? in
            try session.transaction(operation) { () throws(CatalogError) -> Int? in
                // Two servers claiming at once: the row lock makes the second see the first's owner.
                let rows = try session.run(operation, #"""
                    SELECT "directory" FROM sessions WHERE "id" = \#(id) AND "serverID" IS NOT DISTINCT FROM \#(owner) FOR UPDATE
                    """#)
                guard let old = try Self.decode(operation, rows, { try $0.decode(String.self) }).first else { return nil }
                if let owner {
                    let beats = try session.run(operation, #"SELECT "heartbeatAt" FROM servers WHERE "id" = \#(owner)"#)
                    if let beat = try Self.decode(operation, beats, { try $0.decode(Double.self) }).first, beat >= Self.seconds(leaseCutoff) { return nil }
                }
                try session.run(operation, #"""
                    UPDATE sessions SET "serverID" = \#(me), "directory" = \#(directory), "status" = \#(RecordingStatus.recording.rawValue),
                        "endedAt" = NULL, "error" = NULL, "durableSequence" = NULL WHERE "id" = \#(id)
                    """#)
                try session.run(operation, #"""
                    UPDATE recordings SET "path" = \#(directory) || substr("path", \#(old.count + 1)::int)
                    WHERE "sessionID" = \#(id) AND substr("path", 1, \#(old.count + 1)::int) = \#(old + "/")
                    """#)
                let epochs = try session.run(operation, #"""
                    INSERT INTO session_leases ("sessionID", "epoch", "claimedAt") VALUES (\#(id), 1, \#(Self.seconds(Date())))
                    ON CONFLICT ("sessionID") DO UPDATE SET "epoch" = session_leases."epoch" + 1, "claimedAt" = excluded."claimedAt"
                    RETURNING "epoch"
                    """#)
                return try Self.decode(operation, epochs, { Int(try $0.decode(Int64.self)) }).first
            }
        }
    }

    func sessionsOfSilentServers(since cutoff: Date) throws(CatalogError) -> [SessionRecord] {
        let columns = PostgresCatalogRows.sessionColumns.split(separator: ",").map { "s." + $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ", ")
        return try fetch("list the sessions of silent servers", #"""
            SELECT \#(unescaped: columns) FROM sessions s JOIN servers v ON v."id" = s."serverID"
            WHERE s."status" = \#(RecordingStatus.recording.rawValue) AND s."serverID" <> \#(serverID) AND v."heartbeatAt" < \#(Self.seconds(cutoff))
            ORDER BY s."createdAt", s."id"
            """#, PostgresCatalogRows.session)
    }

    func sessionEpoch(id: String) throws(CatalogError) -> Int {
        try fetch("read the epoch of session \(id)", #"SELECT "epoch" FROM session_leases WHERE "sessionID" = \#(id)"#) {
            Int(try $0.decode(Int64.self))
        }.first ?? 0
    }

    // MARK: Plumbing

    /// Runs one statement; returns how many rows it changed.
    @discardableResult
    private func run(_ operation: String, _ query: PostgresQuery) throws(CatalogError) -> Int {
        try connection.withSession(operation) { (session) throws(CatalogError) in
            try session.run(operation, query).metadata.rows ?? 0
        }
    }

    private func fetch<T>(_ operation: String, _ query: PostgresQuery, _ decode: (PostgresRow) throws -> T) throws(CatalogError) -> [T] {
        let rows = try connection.withSession(operation) { (session) throws(CatalogError) in try session.run(operation, query) }
        return try Self.decode(operation, rows, decode)
    }

    private static func decode<T>(_ operation: String, _ rows: PostgresQueryResult, _ decode: (PostgresRow) throws -> T) throws(CatalogError) -> [T] {
        do { return try rows.map(decode) } catch {
            throw CatalogError(.corruptRow, "cannot \(operation): a row does not hold what the catalog writes", underlying: "\(error)")
        }
    }

    private static func seconds(_ date: Date) -> Double { date.timeIntervalSince1970 }
}

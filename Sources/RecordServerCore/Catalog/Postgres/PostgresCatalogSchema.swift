import PostgresNIO

/// The catalog's schema in PostgreSQL: the same tables, columns, indexes and migrations (same
/// identifiers, same order) as `CatalogSchema` for SQLite, so both backends hold the same rows
/// and one set of tests runs against both (`CatalogTests`). Append-only, like SQLite's.
///
/// Differences are PostgreSQL's spelling only:
/// - column names are quoted (camelCase as in SQLite, so the models map one to one);
/// - text is `COLLATE "C"`: byte order, as SQLite sorts, whatever locale the cluster has;
/// - dates are `DOUBLE PRECISION` seconds since 1970, integers `BIGINT`;
/// - labels stay JSON text (sorted keys); queries read them as `jsonb`.
///
/// Migrations run in one transaction under an advisory lock, so servers that start together
/// against one database migrate it once; applied identifiers are kept in `catalog_migrations`.
enum PostgresCatalogSchema {
    struct Migration {
        var identifier: String
        var statements: [String]
    }

    /// `pg_advisory_xact_lock` key: "MCRCATAL" as 8 ASCII bytes.
    static let migrationLockKey: Int64 = 0x4D43_5243_4154_414C

    static let migrations: [Migration] = [
        Migration(identifier: "v1-agents-sessions-recordings-tracks", statements: [
            """
            CREATE TABLE agents (
                "id" TEXT COLLATE "C" PRIMARY KEY NOT NULL,
                "lastAddress" TEXT NOT NULL,
                "softwareVersion" TEXT NOT NULL,
                "firstSeen" DOUBLE PRECISION NOT NULL,
                "lastSeen" DOUBLE PRECISION NOT NULL
            )
            """,
            """
            CREATE TABLE sessions (
                "id" TEXT COLLATE "C" PRIMARY KEY NOT NULL,
                "agentID" TEXT COLLATE "C" NOT NULL,
                "labels" TEXT NOT NULL DEFAULT '{}',
                "status" TEXT NOT NULL,
                "createdAt" DOUBLE PRECISION NOT NULL,
                "endedAt" DOUBLE PRECISION,
                "error" TEXT,
                "directory" TEXT NOT NULL
            )
            """,
            #"CREATE INDEX sessions_by_status ON sessions("status", "createdAt")"#,
            #"CREATE INDEX sessions_by_agent ON sessions("agentID", "createdAt")"#,
            """
            CREATE TABLE recordings (
                "id" TEXT COLLATE "C" PRIMARY KEY NOT NULL,
                "sessionID" TEXT COLLATE "C" NOT NULL,
                "agentID" TEXT COLLATE "C" NOT NULL,
                "segmentIndex" BIGINT NOT NULL,
                "path" TEXT NOT NULL,
                "status" TEXT NOT NULL,
                "sizeBytes" BIGINT NOT NULL DEFAULT 0,
                "durationSeconds" DOUBLE PRECISION NOT NULL DEFAULT 0,
                "startSeconds" DOUBLE PRECISION NOT NULL DEFAULT 0,
                "createdAt" DOUBLE PRECISION NOT NULL,
                "finishedAt" DOUBLE PRECISION,
                "error" TEXT
            )
            """,
            #"CREATE INDEX recordings_by_created ON recordings("createdAt")"#,
            #"CREATE INDEX recordings_by_agent ON recordings("agentID", "createdAt")"#,
            #"CREATE INDEX recordings_by_status ON recordings("status", "createdAt")"#,
            #"CREATE INDEX recordings_by_session ON recordings("sessionID", "segmentIndex")"#,
            """
            CREATE TABLE tracks (
                "sessionID" TEXT COLLATE "C" NOT NULL,
                "trackID" BIGINT NOT NULL,
                "label" TEXT COLLATE "C" NOT NULL,
                "kind" TEXT NOT NULL,
                "codec" TEXT NOT NULL,
                "width" BIGINT NOT NULL,
                "height" BIGINT NOT NULL,
                "status" TEXT NOT NULL,
                "samples" BIGINT NOT NULL DEFAULT 0,
                "bytes" BIGINT NOT NULL DEFAULT 0,
                "dropped" BIGINT NOT NULL DEFAULT 0,
                "error" TEXT,
                PRIMARY KEY ("sessionID", "trackID")
            )
            """,
        ]),
        Migration(identifier: "v2-session-durable-sequence", statements: [
            #"ALTER TABLE sessions ADD COLUMN "durableSequence" BIGINT"#,
        ]),
        Migration(identifier: "v3-recording-ids-as-file-numbers", statements: [
            #"""
            UPDATE recordings SET "id" = "sessionID" || '-' || lpad(("segmentIndex" + 1)::text, 4, '0')
            WHERE "id" = "sessionID" || '-' || "segmentIndex"::text
            """#,
        ]),
        Migration(identifier: "v4-servers", statements: [
            #"ALTER TABLE sessions ADD COLUMN "serverID" TEXT COLLATE "C""#,
            #"CREATE INDEX sessions_by_server ON sessions("serverID", "status")"#,
            """
            CREATE TABLE servers (
                "id" TEXT COLLATE "C" PRIMARY KEY NOT NULL,
                "ingestAddress" TEXT NOT NULL,
                "softwareVersion" TEXT NOT NULL,
                "startedAt" DOUBLE PRECISION NOT NULL,
                "heartbeatAt" DOUBLE PRECISION NOT NULL,
                "liveSessions" BIGINT NOT NULL,
                "connectedAgents" BIGINT NOT NULL
            )
            """,
        ]),
        Migration(identifier: "v5-uploads", statements: [
            """
            CREATE TABLE uploads (
                "recordingID" TEXT COLLATE "C" PRIMARY KEY NOT NULL,
                "objectKey" TEXT NOT NULL,
                "etag" TEXT NOT NULL,
                "sizeBytes" BIGINT NOT NULL,
                "uploadedAt" DOUBLE PRECISION NOT NULL,
                "localRemoved" BOOLEAN NOT NULL DEFAULT FALSE
            )
            """,
        ]),
        Migration(identifier: "v6-session-leases", statements: [
            """
            CREATE TABLE session_leases (
                "sessionID" TEXT COLLATE "C" PRIMARY KEY NOT NULL,
                "epoch" BIGINT NOT NULL,
                "claimedAt" DOUBLE PRECISION NOT NULL
            )
            """,
        ]),
    ]

    /// Brings the database to the current schema (or, for tests of old databases, up to and
    /// including the migration `last`).
    /// - Throws: `.newerSchema` when it holds a migration this build does not know,
    ///   `.migrationFailed` for anything else.
    static func migrate(_ connection: PostgresCatalogConnection, upTo last: String? = nil) throws(CatalogError) {
        let known = Set(migrations.map(\.identifier))
        let wanted = last.flatMap { last in migrations.firstIndex { $0.identifier == last } }.map { migrations[...$0] } ?? migrations[...]
        do {
            try connection.withSession("migrate the catalog") { (session) throws(CatalogError) in
                try session.transaction("migrate the catalog") { () throws(CatalogError) in
                    try session.run("lock the catalog for migration", "SELECT pg_advisory_xact_lock(\(migrationLockKey))")
                    try session.run("create catalog_migrations", """
                        CREATE TABLE IF NOT EXISTS catalog_migrations ("identifier" TEXT PRIMARY KEY NOT NULL, "appliedAt" DOUBLE PRECISION NOT NULL)
                        """)
                    let rows = try session.run("read catalog_migrations", #"SELECT "identifier" FROM catalog_migrations"#)
                    var applied: Set<String> = []
                    for row in rows {
                        do { applied.insert(try row.decode(String.self)) } catch {
                            throw CatalogError(.corruptRow, "cannot read catalog_migrations", underlying: "\(error)")
                        }
                    }
                    if let newer = applied.subtracting(known).sorted().first {
                        throw CatalogError(.newerSchema, "the catalog at \(connection.address) was migrated by a newer record-server " +
                                           "(migration \(newer)); run that version, or restore a backup made by this one")
                    }
                    for migration in wanted where !applied.contains(migration.identifier) {
                        for statement in migration.statements {
                            try session.run("apply \(migration.identifier)", PostgresQuery(unsafeSQL: statement))
                        }
                        try session.run("record \(migration.identifier)", """
                            INSERT INTO catalog_migrations ("identifier", "appliedAt") VALUES (\(migration.identifier), EXTRACT(EPOCH FROM now()))
                            """)
                    }
                }
            }
        } catch where error.code == .newerSchema || error.code == .openFailed {
            throw error
        } catch {
            throw CatalogError(.migrationFailed, "cannot bring the catalog at \(connection.address) up to the current schema",
                               underlying: error.underlying ?? error.message)
        }
    }
}

import GRDB

/// The catalog's schema as a list of versioned migrations. Migrations are append-only: a
/// released one is never edited, a change is a new migration, so any older catalog file is
/// brought forward step by step when the server opens it.
///
/// Conventions:
/// - Dates are `REAL` seconds since 1970 (UTC): sortable, comparable in SQL, and exact to
///   well under a microsecond for present-day dates.
/// - Statuses are the raw values of `RecordingStatus` / `TrackStatus`.
/// - Labels are a JSON object of strings (`{"room":"a"}`), keys sorted.
/// - No foreign keys between sessions, recordings and tracks: the files on disk are the truth
///   and the catalog is their index; a row must be writable even if an earlier insert for
///   the same session failed (ingest never stops a recording because of the catalog).
enum CatalogSchema {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1-agents-sessions-recordings-tracks") { db in
            try db.execute(sql: """
                CREATE TABLE agents (
                    id TEXT PRIMARY KEY NOT NULL,
                    lastAddress TEXT NOT NULL,
                    softwareVersion TEXT NOT NULL,
                    firstSeen REAL NOT NULL,
                    lastSeen REAL NOT NULL
                );
                CREATE TABLE sessions (
                    id TEXT PRIMARY KEY NOT NULL,
                    agentID TEXT NOT NULL,
                    labels TEXT NOT NULL DEFAULT '{}',
                    status TEXT NOT NULL,
                    createdAt REAL NOT NULL,
                    endedAt REAL,
                    error TEXT,
                    directory TEXT NOT NULL
                );
                -- Crash recovery asks for sessions still 'recording'; the admin API lists by agent.
                CREATE INDEX sessions_by_status ON sessions(status, createdAt);
                CREATE INDEX sessions_by_agent ON sessions(agentID, createdAt);
                CREATE TABLE recordings (
                    id TEXT PRIMARY KEY NOT NULL,
                    sessionID TEXT NOT NULL,
                    agentID TEXT NOT NULL,
                    segmentIndex INTEGER NOT NULL,
                    path TEXT NOT NULL,
                    status TEXT NOT NULL,
                    sizeBytes INTEGER NOT NULL DEFAULT 0,
                    durationSeconds REAL NOT NULL DEFAULT 0,
                    startSeconds REAL NOT NULL DEFAULT 0,
                    createdAt REAL NOT NULL,
                    finishedAt REAL,
                    error TEXT
                );
                -- Listing (newest first, optionally by agent or status), per-session lookups,
                -- and retention (oldest first).
                CREATE INDEX recordings_by_created ON recordings(createdAt);
                CREATE INDEX recordings_by_agent ON recordings(agentID, createdAt);
                CREATE INDEX recordings_by_status ON recordings(status, createdAt);
                CREATE INDEX recordings_by_session ON recordings(sessionID, segmentIndex);
                CREATE TABLE tracks (
                    sessionID TEXT NOT NULL,
                    trackID INTEGER NOT NULL,
                    label TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    codec TEXT NOT NULL,
                    width INTEGER NOT NULL,
                    height INTEGER NOT NULL,
                    status TEXT NOT NULL,
                    samples INTEGER NOT NULL DEFAULT 0,
                    bytes INTEGER NOT NULL DEFAULT 0,
                    dropped INTEGER NOT NULL DEFAULT 0,
                    error TEXT,
                    PRIMARY KEY (sessionID, trackID)
                );
                """)
        }
        // What a finished session told its agent in SessionClosed, so that a resume arriving
        // after the answer was lost (a server killed right after finalizing) gets it again.
        migrator.registerMigration("v2-session-durable-sequence") { db in
            try db.execute(sql: "ALTER TABLE sessions ADD COLUMN durableSequence INTEGER")
        }
        // Recording ids number files as their names do, from 0001 (they counted from 0).
        migrator.registerMigration("v3-recording-ids-as-file-numbers") { db in
            try db.execute(sql: """
                UPDATE recordings SET id = sessionID || '-' || printf('%04d', segmentIndex + 1)
                WHERE id = sessionID || '-' || segmentIndex
                """)
        }
        // Several servers may share a catalog (PostgreSQL): each session names its server, and
        // each server's heartbeat describes it (GET /v1/servers).
        migrator.registerMigration("v4-servers") { db in
            try db.execute(sql: """
                ALTER TABLE sessions ADD COLUMN serverID TEXT;
                CREATE INDEX sessions_by_server ON sessions(serverID, status);
                CREATE TABLE servers (
                    id TEXT PRIMARY KEY NOT NULL,
                    ingestAddress TEXT NOT NULL,
                    softwareVersion TEXT NOT NULL,
                    startedAt REAL NOT NULL,
                    heartbeatAt REAL NOT NULL,
                    liveSessions INTEGER NOT NULL,
                    connectedAgents INTEGER NOT NULL
                );
                """)
        }
        // Recordings copied to object storage (issue 18), one row per uploaded file.
        migrator.registerMigration("v5-uploads") { db in
            try db.execute(sql: """
                CREATE TABLE uploads (
                    recordingID TEXT PRIMARY KEY NOT NULL,
                    objectKey TEXT NOT NULL,
                    etag TEXT NOT NULL,
                    sizeBytes INTEGER NOT NULL,
                    uploadedAt REAL NOT NULL,
                    localRemoved INTEGER NOT NULL DEFAULT 0
                );
                """)
        }
        // Sessions another server took over when their owner's lease ran out (issue 18): how
        // many times each changed servers, which names its fragments in object storage.
        migrator.registerMigration("v6-session-leases") { db in
            try db.execute(sql: """
                CREATE TABLE session_leases (
                    sessionID TEXT PRIMARY KEY NOT NULL,
                    epoch INTEGER NOT NULL,
                    claimedAt REAL NOT NULL
                );
                """)
        }
        return migrator
    }
}

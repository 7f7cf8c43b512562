public import AdminModels
public import Foundation

// The statuses are the admin API's vocabulary (docs/admin-api.md), so they live with its types;
// the catalog stores their raw values.
public typealias RecordingStatus = AdminModels.RecordingStatus
public typealias TrackStatus = AdminModels.TrackStatus

public struct AgentRecord: Codable, Sendable, Equatable {
    var id: String
    var lastAddress: String
    var softwareVersion: String
    var firstSeen: Date
    var lastSeen: Date
    init(id: String, lastAddress: String, softwareVersion: String, firstSeen: Date, lastSeen: Date) {
        self.id = id
        self.lastAddress = lastAddress
        self.softwareVersion = softwareVersion
        self.firstSeen = firstSeen
        self.lastSeen = lastSeen
    }
}

public struct SessionRecord: Codable, Sendable, Equatable {
    var id: String
    public var agentID: String
    var labels: [String: String]
    public var status: RecordingStatus
    var createdAt: Date
    var endedAt: Date?
    public var error: String?
    /// The session's storage directory (derived from validated ids only).
    public var directory: String
    /// The last sequence number stored, once the session finished and said so to its agent
    /// in `SessionClosed`: a resume that finds the session finished gets the same answer.
    /// Nil while it records, and for sessions finished by recovery or cancelled.
    var durableSequence: UInt64?
    /// The record-server that recorded it (``RecordingCatalog/serverID``, stamped on insert);
    /// nil for rows written before servers had ids. A server resumes and recovers only its own.
    public var serverID: String?
    init(id: String, agentID: String, labels: [String: String], status: RecordingStatus, createdAt: Date,
                endedAt: Date? = nil, error: String? = nil, directory: String, durableSequence: UInt64? = nil, serverID: String? = nil) {
        self.id = id
        self.agentID = agentID
        self.labels = labels
        self.status = status
        self.createdAt = createdAt
        self.endedAt = endedAt
        self.error = error
        self.directory = directory
        self.durableSequence = durableSequence
        self.serverID = serverID
    }
}

/// A recording's copy in object storage: written once the upload is complete and checked
/// (size and multipart ETag, `S3Client.uploadFile`). Kept apart from `RecordingRecord`, whose
/// rows the sessions rewrite from their files, so a rewrite never forgets an upload.
public struct UploadRecord: Codable, Sendable, Equatable {
    public var recordingID: String
    /// The object's key in the bucket (with the store's prefix).
    public var objectKey: String
    /// The object's ETag as the store gave it, unquoted.
    public var etag: String
    public var sizeBytes: Int64
    public var uploadedAt: Date
    /// The local file was removed (policy `keepLocalCopy: false`); the object is the recording.
    public var localRemoved: Bool
    public init(recordingID: String, objectKey: String, etag: String, sizeBytes: Int64, uploadedAt: Date, localRemoved: Bool = false) {
        self.recordingID = recordingID
        self.objectKey = objectKey
        self.etag = etag
        self.sizeBytes = sizeBytes
        self.uploadedAt = uploadedAt
        self.localRemoved = localRemoved
    }
}

/// One record-server of the fleet that shares a catalog, as its last heartbeat described it.
public struct ServerRecord: Codable, Sendable, Equatable {
    public var id: String
    /// Where agents connect (`host:port` as configured; a wildcard host is shown as is).
    public var ingestAddress: String
    public var softwareVersion: String
    public var startedAt: Date
    public var heartbeatAt: Date
    public var liveSessions: Int
    public var connectedAgents: Int
    public init(id: String, ingestAddress: String, softwareVersion: String, startedAt: Date, heartbeatAt: Date,
                liveSessions: Int, connectedAgents: Int) {
        self.id = id
        self.ingestAddress = ingestAddress
        self.softwareVersion = softwareVersion
        self.startedAt = startedAt
        self.heartbeatAt = heartbeatAt
        self.liveSessions = liveSessions
        self.connectedAgents = connectedAgents
    }
}

/// One file of a session (a session has several when segmenting is on).
public struct RecordingRecord: Codable, Sendable, Equatable {
    /// `<sessionID>-<segmentIndex>`, unique.
    public var id: String
    public var sessionID: String
    public var agentID: String
    public var segmentIndex: Int
    public var path: String
    public var status: RecordingStatus
    public var sizeBytes: Int64
    public var durationSeconds: Double
    /// Where the file starts on the session timeline, seconds.
    public var startSeconds: Double
    public var createdAt: Date
    public var finishedAt: Date?
    public var error: String?
    public init(id: String, sessionID: String, agentID: String, segmentIndex: Int, path: String, status: RecordingStatus,
                sizeBytes: Int64 = 0, durationSeconds: Double = 0, startSeconds: Double = 0, createdAt: Date,
                finishedAt: Date? = nil, error: String? = nil) {
        self.id = id
        self.sessionID = sessionID
        self.agentID = agentID
        self.segmentIndex = segmentIndex
        self.path = path
        self.status = status
        self.sizeBytes = sizeBytes
        self.durationSeconds = durationSeconds
        self.startSeconds = startSeconds
        self.createdAt = createdAt
        self.finishedAt = finishedAt
        self.error = error
    }
}

public struct TrackRecord: Codable, Sendable, Equatable {
    public var sessionID: String
    public var trackID: Int
    public var label: String
    /// "video" or "audio".
    public var kind: String
    /// "h264" or "opus".
    public var codec: String
    public var width: Int
    public var height: Int
    public var status: TrackStatus
    public var samples: Int64
    public var bytes: Int64
    /// Samples the agent reported dropped before sending (never silent).
    public var dropped: Int64
    public var error: String?
    public init(sessionID: String, trackID: Int, label: String, kind: String, codec: String, width: Int, height: Int,
                status: TrackStatus = .active, samples: Int64 = 0, bytes: Int64 = 0, dropped: Int64 = 0, error: String? = nil) {
        self.sessionID = sessionID
        self.trackID = trackID
        self.label = label
        self.kind = kind
        self.codec = codec
        self.width = width
        self.height = height
        self.status = status
        self.samples = samples
        self.bytes = bytes
        self.dropped = dropped
        self.error = error
    }
}

/// Filters for listing recordings; nil means "any".
public struct RecordingFilter: Sendable, Equatable {
    /// Files of sessions labelled `key` (any value), or `key=value` when a value is given.
    public struct LabelMatch: Sendable, Equatable {
        var key: String
        var value: String?
        init(key: String, value: String?) {
            self.key = key
            self.value = value
        }
    }

    public var agentID: String?
    public var status: RecordingStatus?
    public var since: Date?
    public var until: Date?
    public var label: LabelMatch?
    public var limit: Int
    public init(agentID: String? = nil, status: RecordingStatus? = nil, since: Date? = nil, until: Date? = nil,
                label: LabelMatch? = nil, limit: Int = 1000) {
        self.agentID = agentID
        self.status = status
        self.since = since
        self.until = until
        self.label = label
        self.limit = limit
    }
}

/// What the server needs from the catalog. Implemented by `Catalog` (SQLite via GRDB, the
/// default) and `PostgresCatalog` (`--catalog postgresql://…`); `CatalogTests` runs on both.
/// Every call is synchronous and quick (small rows); callers are actors off the event loop.
protocol RecordingCatalog: Sendable {
    /// This server's id: stamped on the sessions it inserts, and the only sessions its
    /// ``unfinishedSessions()`` and ``finishedSessionsWithStaleRows()`` return, so servers that
    /// share a catalog never resume or recover each other's.
    var serverID: String { get }
    /// Whether other servers may use this catalog too (PostgreSQL): only then are heartbeats
    /// written, and `GET /v1/servers` read from it.
    var isShared: Bool { get }

    func recordAgentSeen(_ agent: AgentRecord) throws
    func agents() throws -> [AgentRecord]

    func insertSession(_ session: SessionRecord) throws
    func session(id: String) throws -> SessionRecord?
    /// Sets how the session ended; `durableSequence` as in ``SessionRecord/durableSequence``.
    func updateSession(id: String, status: RecordingStatus, endedAt: Date?, error: String?, durableSequence: UInt64?) throws
    /// This server's sessions still marked `recording` (unfinished after a crash), and those
    /// with no server id (written before servers had one).
    func unfinishedSessions() throws -> [SessionRecord]
    /// Finished sessions whose rows contradict their end: a file still `recording` or a track
    /// still `active` (a catalog write failed before the server stopped).
    func finishedSessionsWithStaleRows() throws -> [SessionRecord]
    /// Removes the session, its tracks and its recordings (the caller deletes the files first).
    func deleteSession(id: String) throws

    func upsertRecording(_ recording: RecordingRecord) throws
    func recording(id: String) throws -> RecordingRecord?
    func recordings(_ filter: RecordingFilter) throws -> [RecordingRecord]
    func recordings(sessionID: String) throws -> [RecordingRecord]
    /// Removes the row (the caller deletes the file first).
    func deleteRecording(id: String) throws

    func upsertTrack(_ track: TrackRecord) throws
    func tracks(sessionID: String) throws -> [TrackRecord]

    /// The sum of `sizeBytes` over this server's recordings that are on its disk, live ones
    /// included: the disk they occupy (a file whose local copy was removed after its upload
    /// occupies none; other servers' files are on their disks).
    func totalRecordingBytes() throws -> Int64
    /// This server's finished recordings (any status but `recording`), oldest first: by
    /// `createdAt`, then session and segment. `offset` skips rows the caller decided to keep.
    /// Other servers' files are on their disks, under their retention.
    func oldestFinishedRecordings(limit: Int, offset: Int) throws -> [RecordingRecord]

    /// This server's finished recordings (any status but `recording`) that have no upload yet,
    /// oldest first.
    func recordingsAwaitingUpload(limit: Int) throws -> [RecordingRecord]
    /// Inserts or replaces the upload of a recording.
    func recordUpload(_ upload: UploadRecord) throws
    func upload(recordingID: String) throws -> UploadRecord?
    /// Removes the upload row (the caller deleted the object first); a missing row is fine.
    func deleteUpload(recordingID: String) throws
    /// Uploads whose recording row is gone (retention, `recordctl delete`): their objects are
    /// deleted next, then these rows. Any server of a fleet may do it.
    func uploadsOfDeletedRecordings(limit: Int) throws -> [UploadRecord]

    /// Inserts or replaces this server's row in the fleet table.
    func recordHeartbeat(_ server: ServerRecord) throws
    /// Every server that ever sent a heartbeat, by id.
    func servers() throws -> [ServerRecord]

    /// Takes session `id` over from server `owner`, whose lease ran out (its last heartbeat is
    /// before `leaseCutoff`, or it never sent one), in one transaction: the session becomes
    /// this server's and `recording` again, its directory and its files' paths move to
    /// `directory`, and its epoch grows by one. Returns the new epoch, or nil when the owner's
    /// lease still runs or another server took the session first (the owner changed).
    func claimSession(id: String, from owner: String?, leaseCutoff: Date, directory: String) throws -> Int?
    /// Other servers' sessions still `recording` whose server has been silent since `cutoff`
    /// (its last heartbeat is older): orphans, which another server finishes from object storage.
    func sessionsOfSilentServers(since cutoff: Date) throws -> [SessionRecord]
    /// How many times the session changed servers (0 for one that never did): it names the
    /// session's fragments in object storage, so a later owner's win over an earlier one's.
    func sessionEpoch(id: String) throws -> Int
}

extension RecordingCatalog {
    /// Ends a session whose durable point is not known (recovered or cancelled).
    func updateSession(id: String, status: RecordingStatus, endedAt: Date?, error: String?) throws {
        try updateSession(id: id, status: status, endedAt: endedAt, error: error, durableSequence: nil)
    }
}

import Foundation

/// `GET /v1/recordings`: recording files from the catalog.
public struct RecordingListResponse: Codable, Sendable, Equatable {
    public var recordings: [RecordingFile]
    /// The effective limit, so a client can tell a full page from a complete answer.
    public var limit: Int

    public init(recordings: [RecordingFile], limit: Int) {
        self.recordings = recordings
        self.limit = limit
    }
}

/// `GET /v1/recordings/{id}`: one recording with its session's tracks.
public struct RecordingDetailResponse: Codable, Sendable, Equatable {
    public var recording: RecordingFile
    public var tracks: [SessionTrack]

    public init(recording: RecordingFile, tracks: [SessionTrack]) {
        self.recording = recording
        self.tracks = tracks
    }
}

/// One file of a session (a session has several when segmenting is on).
public struct RecordingFile: Codable, Sendable, Equatable {
    /// `<session id>-<file number>`, the number four digits from `0001`.
    public var id: String
    public var sessionID: String
    public var agentID: String
    /// The file's position in its session, from 0.
    public var segmentIndex: Int
    /// The file on the server.
    public var path: String
    public var status: RecordingStatus
    /// While the file is being written, its size on disk now: what is durable so far.
    public var sizeBytes: Int64
    /// Media duration, read back from the file; while it is being written, that of its durable fragments.
    public var durationSeconds: Double
    /// Where this file starts on the session timeline.
    public var startSeconds: Double
    public var createdAt: Date
    public var finishedAt: Date?
    /// Why it failed or was interrupted.
    public var error: String?

    public init(id: String, sessionID: String, agentID: String, segmentIndex: Int, path: String, status: RecordingStatus,
                sizeBytes: Int64, durationSeconds: Double, startSeconds: Double, createdAt: Date, finishedAt: Date? = nil,
                error: String? = nil) {
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

    enum CodingKeys: String, CodingKey {
        case id, sessionID = "session_id", agentID = "agent_id", segmentIndex = "segment_index", path, status
        case sizeBytes = "size_bytes", durationSeconds = "duration_seconds", startSeconds = "start_seconds"
        case createdAt = "created_at", finishedAt = "finished_at", error
    }

    /// Every key, nil as an explicit `null`.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(sessionID, forKey: .sessionID)
        try c.encode(agentID, forKey: .agentID)
        try c.encode(segmentIndex, forKey: .segmentIndex)
        try c.encode(path, forKey: .path)
        try c.encode(status, forKey: .status)
        try c.encode(sizeBytes, forKey: .sizeBytes)
        try c.encode(durationSeconds, forKey: .durationSeconds)
        try c.encode(startSeconds, forKey: .startSeconds)
        try c.encode(createdAt, forKey: .createdAt)
        try c.encode(finishedAt, forKey: .finishedAt)
        try c.encode(error, forKey: .error)
    }
}

/// A track of a finished or recording session, from the catalog.
public struct SessionTrack: Codable, Sendable, Equatable {
    public var trackID: Int
    public var label: String
    /// `video` or `audio`.
    public var kind: String
    /// `h264` or `opus`.
    public var codec: String
    /// 0 for audio.
    public var width: Int
    public var height: Int
    public var status: TrackStatus
    public var samples: Int64
    public var bytes: Int64
    /// Samples the agent reported dropped before sending.
    public var dropped: Int64
    public var error: String?

    public init(trackID: Int, label: String, kind: String, codec: String, width: Int, height: Int, status: TrackStatus,
                samples: Int64, bytes: Int64, dropped: Int64, error: String? = nil) {
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

    enum CodingKeys: String, CodingKey {
        case trackID = "track_id", label, kind, codec, width, height, status, samples, bytes, dropped, error
    }

    /// Every key, nil as an explicit `null`.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(trackID, forKey: .trackID)
        try c.encode(label, forKey: .label)
        try c.encode(kind, forKey: .kind)
        try c.encode(codec, forKey: .codec)
        try c.encode(width, forKey: .width)
        try c.encode(height, forKey: .height)
        try c.encode(status, forKey: .status)
        try c.encode(samples, forKey: .samples)
        try c.encode(bytes, forKey: .bytes)
        try c.encode(dropped, forKey: .dropped)
        try c.encode(error, forKey: .error)
    }
}

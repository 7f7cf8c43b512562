import Foundation

/// `GET /v1/sessions`: the live sessions, oldest first.
public struct SessionListResponse: Codable, Sendable, Equatable {
    public var sessions: [LiveSession]
    public init(sessions: [LiveSession]) { self.sessions = sessions }
}

public struct LiveSession: Codable, Sendable, Equatable {
    public var id: String
    public var agentID: String
    /// User data, returned exactly as given at the start.
    public var labels: [String: String]
    /// `recording`, `detached` (waiting for a resume), `finalizing`, or `suspended` (left
    /// unfinished by the previous server process, waiting for its agent).
    public var state: String
    public var startedAt: Date
    /// The session's storage directory.
    public var path: String
    /// The highest sequence number acknowledged to the agent.
    public var lastAck: UInt64
    public var tracks: [LiveTrack]

    public init(id: String, agentID: String, labels: [String: String], state: String, startedAt: Date, path: String,
                lastAck: UInt64, tracks: [LiveTrack]) {
        self.id = id
        self.agentID = agentID
        self.labels = labels
        self.state = state
        self.startedAt = startedAt
        self.path = path
        self.lastAck = lastAck
        self.tracks = tracks
    }

    enum CodingKeys: String, CodingKey {
        case id, agentID = "agent_id", labels, state, startedAt = "started_at", path, lastAck = "last_ack", tracks
    }
}

/// Live per-track figures of a session being recorded.
public struct LiveTrack: Codable, Sendable, Equatable {
    public var trackID: Int
    public var label: String
    /// `video` or `audio`.
    public var kind: String
    /// `h264` or `opus`.
    public var codec: String
    public var status: TrackStatus
    public var samples: Int64
    public var bytes: Int64
    /// Samples the agent reported dropped before sending.
    public var dropped: Int64
    /// Over the last few seconds of media time.
    public var fps: Double
    /// Bits per second, over the last few seconds of media time.
    public var bitrate: Double
    /// How far this track's newest sample is behind the session's newest sample, seconds.
    public var lagSeconds: Double
    /// Why a `failed` track failed: the agent's `TrackEnd` message or the sample the server refused.
    public var error: String?

    public init(trackID: Int, label: String, kind: String, codec: String, status: TrackStatus, samples: Int64, bytes: Int64,
                dropped: Int64, fps: Double, bitrate: Double, lagSeconds: Double, error: String? = nil) {
        self.trackID = trackID
        self.label = label
        self.kind = kind
        self.codec = codec
        self.status = status
        self.samples = samples
        self.bytes = bytes
        self.dropped = dropped
        self.fps = fps
        self.bitrate = bitrate
        self.lagSeconds = lagSeconds
        self.error = error
    }

    enum CodingKeys: String, CodingKey {
        case trackID = "track_id", label, kind, codec, status, samples, bytes, dropped, fps, bitrate
        case lagSeconds = "lag_seconds", error
    }

    /// Every key, nil as an explicit `null`.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(trackID, forKey: .trackID)
        try c.encode(label, forKey: .label)
        try c.encode(kind, forKey: .kind)
        try c.encode(codec, forKey: .codec)
        try c.encode(status, forKey: .status)
        try c.encode(samples, forKey: .samples)
        try c.encode(bytes, forKey: .bytes)
        try c.encode(dropped, forKey: .dropped)
        try c.encode(fps, forKey: .fps)
        try c.encode(bitrate, forKey: .bitrate)
        try c.encode(lagSeconds, forKey: .lagSeconds)
        try c.encode(error, forKey: .error)
    }
}

import Foundation

/// A connected agent, as the admin API shows it.
public struct ConnectedAgentInfo: Codable, Sendable, Equatable {
    public var id: String
    public var address: String
    public var softwareVersion: String
    public var connectedAt: Date
    public var lastSeen: Date
    /// The session open on its connection, if any.
    public var sessionID: String?
    /// Latest round-trip time from heartbeats, milliseconds.
    public var roundTripMillis: Double?
    /// The agent's latest refusal of a start because a source cannot capture; cleared when it
    /// next opens a session.
    public var captureFailure: CaptureFailureInfo?
    public init(id: String, address: String, softwareVersion: String, connectedAt: Date, lastSeen: Date,
                sessionID: String? = nil, roundTripMillis: Double? = nil, captureFailure: CaptureFailureInfo? = nil) {
        self.id = id
        self.address = address
        self.softwareVersion = softwareVersion
        self.connectedAt = connectedAt
        self.lastSeen = lastSeen
        self.sessionID = sessionID
        self.roundTripMillis = roundTripMillis
        self.captureFailure = captureFailure
    }
}

/// What an agent said when it could not capture (protocol.md `captureFailed`).
public struct CaptureFailureInfo: Codable, Sendable, Equatable {
    /// The agent's words: the source, its device and the cause.
    public var message: String
    public var at: Date
    public init(message: String, at: Date) {
        self.message = message
        self.at = at
    }
}

/// Live per-track figures of a session being recorded.
public struct LiveTrackInfo: Codable, Sendable, Equatable {
    public var trackID: Int
    public var label: String
    public var kind: String
    public var codec: String
    public var status: TrackStatus
    public var samples: Int64
    public var bytes: Int64
    public var dropped: Int64
    /// Over the last few seconds of media time.
    public var fps: Double
    public var bitrate: Double
    /// How far this track's newest sample is behind the session's newest sample, seconds.
    public var lagSeconds: Double
    /// Why the track failed (the agent's `TrackEnd` message, or the sample the server refused).
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
}

public struct LiveSessionInfo: Codable, Sendable, Equatable {
    public var id: String
    public var agentID: String
    public var labels: [String: String]
    /// "recording", "detached" (waiting for a resume), "finalizing", or "suspended" (left
    /// unfinished by the previous server process, waiting for its agent).
    public var state: String
    public var startedAt: Date
    public var path: String
    public var lastAck: UInt64
    public var tracks: [LiveTrackInfo]
    public init(id: String, agentID: String, labels: [String: String], state: String, startedAt: Date, path: String,
                lastAck: UInt64, tracks: [LiveTrackInfo]) {
        self.id = id
        self.agentID = agentID
        self.labels = labels
        self.state = state
        self.startedAt = startedAt
        self.path = path
        self.lastAck = lastAck
        self.tracks = tracks
    }
}

public struct HealthInfo: Codable, Sendable, Equatable {
    public var status: String
    public var version: String
    public var uptimeSeconds: Double
    public var connectedAgents: Int
    public var liveSessions: Int
    public var dataDirectory: String
    public var freeBytes: Int64
    public init(status: String, version: String, uptimeSeconds: Double, connectedAgents: Int, liveSessions: Int,
                dataDirectory: String, freeBytes: Int64) {
        self.status = status
        self.version = version
        self.uptimeSeconds = uptimeSeconds
        self.connectedAgents = connectedAgents
        self.liveSessions = liveSessions
        self.dataDirectory = dataDirectory
        self.freeBytes = freeBytes
    }
}

/// Why a control request failed, mapped to an HTTP status by the admin API.
public struct AdminError: Error, Sendable, Equatable {
    public enum Kind: String, Sendable { case notFound, conflict, badRequest, unavailable }
    public var kind: Kind
    public var message: String
    /// The session the error is about, for a client to act on (a `conflict` with a running one).
    public var sessionID: String?
    public init(_ kind: Kind, _ message: String, sessionID: String? = nil) {
        self.kind = kind
        self.message = message
        self.sessionID = sessionID
    }
}

/// Everything the admin API can ask of the running server. The ingest side implements it;
/// the admin HTTP layer only translates.
public protocol AdminBackend: Sendable {
    func health() async -> HealthInfo
    func connectedAgents() async -> [ConnectedAgentInfo]
    func liveSessions() async -> [LiveSessionInfo]
    /// Asks a connected agent to start a session and returns the new session's id once the
    /// agent has opened it (nil if it did not within a few seconds). Refuses with `conflict`
    /// when the agent is recording already: nothing is sent to it then.
    func startSession(agentID: String, labels: [String: String]) async throws(AdminError) -> String?
    func stopSession(id: String) async throws(AdminError)
    func cancelSession(id: String) async throws(AdminError)
    func recordings(_ filter: RecordingFilter) async throws(AdminError) -> [RecordingRecord]
    func recording(id: String) async throws(AdminError) -> (RecordingRecord, [TrackRecord])
    /// Deletes the file and the catalog row; refuses while the recording is being written.
    func deleteRecording(id: String) async throws(AdminError)
}

import Foundation

/// One event of `GET /v1/events` (server-sent events) and of the webhooks: something that
/// happened to an agent, a session or a recording file, as it happened. The event's `type` is
/// also the SSE `event:` field and the webhook's `X-Recorder-Event` header.
public struct ServerEvent: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable, CaseIterable {
        /// An agent completed its handshake.
        case agentOnline = "agent.online"
        /// An agent's connection closed.
        case agentOffline = "agent.offline"
        /// An agent opened a session.
        case sessionStarted = "session.started"
        /// A session finished in this server: `status` says how (`completed`, `interrupted`,
        /// `failed`, `cancelled`, `recovered`); its files and catalog rows are final.
        case sessionEnded = "session.ended"
        /// An agent refused a start because a camera or microphone cannot capture
        /// (protocol.md `captureFailed`); `message` is the agent's reason.
        case agentCaptureFailed = "agent.capture_failed"
        /// A recording file is final: its session ended (`status` `completed` or
        /// `interrupted`), or the session went on in a new file (a split; `completed`).
        case recordingFinished = "recording.finished"
        /// A recording file ended in failure (`status` `failed`; `message` says why). It holds
        /// what was durable, unless it was left fragmented (see `message`).
        case recordingFailed = "recording.failed"
        /// A recording file found unfinished after a restart, not resumed, was finalized by
        /// recovery (`status` `recovered`).
        case recordingRecovered = "recording.recovered"
    }

    public var type: Kind
    public var at: Date
    public var agentID: String
    public var sessionID: String?
    /// `recording.*` only: the file's recording id (`GET /v1/recordings/{id}`).
    public var recordingID: String?
    /// `session.ended`: the session's final status; `recording.*`: the file's.
    public var status: String?
    /// `agent.capture_failed`: the agent's reason; `recording.failed`: why the file failed.
    public var message: String?

    public init(type: Kind, at: Date = Date(), agentID: String, sessionID: String? = nil, recordingID: String? = nil,
                status: String? = nil, message: String? = nil) {
        self.type = type
        self.at = at
        self.agentID = agentID
        self.sessionID = sessionID
        self.recordingID = recordingID
        self.status = status
        self.message = message
    }

    enum CodingKeys: String, CodingKey {
        case type, at, agentID = "agent_id", sessionID = "session_id", recordingID = "recording_id", status, message
    }

    /// Every key, nil as an explicit `null`, like the other bodies.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(type, forKey: .type)
        try c.encode(at, forKey: .at)
        try c.encode(agentID, forKey: .agentID)
        try c.encode(sessionID, forKey: .sessionID)
        try c.encode(recordingID, forKey: .recordingID)
        try c.encode(status, forKey: .status)
        try c.encode(message, forKey: .message)
    }
}

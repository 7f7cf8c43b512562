import Foundation

/// One event of `GET /v1/events` (server-sent events): something that happened to an agent
/// or a session, as it happened. The event's `type` is also the SSE `event:` field.
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
    }

    public var type: Kind
    public var at: Date
    public var agentID: String
    public var sessionID: String?
    /// `session.ended` only: the session's final status.
    public var status: String?

    public init(type: Kind, at: Date = Date(), agentID: String, sessionID: String? = nil, status: String? = nil) {
        self.type = type
        self.at = at
        self.agentID = agentID
        self.sessionID = sessionID
        self.status = status
    }

    enum CodingKeys: String, CodingKey {
        case type, at, agentID = "agent_id", sessionID = "session_id", status
    }

    /// Every key, nil as an explicit `null`, like the other bodies.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(type, forKey: .type)
        try c.encode(at, forKey: .at)
        try c.encode(agentID, forKey: .agentID)
        try c.encode(sessionID, forKey: .sessionID)
        try c.encode(status, forKey: .status)
    }
}

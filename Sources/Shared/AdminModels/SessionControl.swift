/// The body of `POST /v1/sessions`: `{"agent": "cam-1", "labels": {"take": "7"}}`.
///
/// Decoding is strict: `labels` may be omitted, any other key is refused, since a misspelt
/// key (`label`) would otherwise start a session without the labels meant for it.
public struct StartSessionRequest: Codable, Sendable, Equatable {
    /// The id of a connected agent.
    public var agent: String
    /// Keys must be protocol identifiers.
    public var labels: [String: String]

    public init(agent: String, labels: [String: String] = [:]) {
        self.agent = agent
        self.labels = labels
    }

    enum CodingKeys: String, CodingKey, CaseIterable { case agent, labels }

    /// Keys the body held besides `agent` and `labels`.
    public struct UnknownFields: Error, Sendable, Equatable {
        public var names: [String]
        public init(names: [String]) { self.names = names }
        public var message: String {
            "unknown field(s) \(names.map { "\"\($0)\"" }.joined(separator: ", ")); expected agent, labels"
        }
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public init(from decoder: any Decoder) throws {
        let known = Set(CodingKeys.allCases.map(\.stringValue))
        let unknown = try decoder.container(keyedBy: AnyKey.self).allKeys.map(\.stringValue).filter { !known.contains($0) }
        if !unknown.isEmpty { throw UnknownFields(names: unknown.sorted()) }
        let container = try decoder.container(keyedBy: CodingKeys.self)
        agent = try container.decode(String.self, forKey: .agent)
        labels = try container.decodeIfPresent([String: String].self, forKey: .labels) ?? [:]
    }
}

/// The answer to a control request (`POST /v1/sessions`, `…/stop`, `…/cancel`): the command
/// was handed to the agent. `agent_id` and `session_id` are left out when they do not apply.
public struct ControlResponse: Codable, Sendable, Equatable {
    /// `started` (201: the agent opened the session, `session_id` names it) or `accepted`
    /// (202: passed on, not yet carried out).
    public var status: String
    /// `start`, `stop` or `cancel`.
    public var action: String
    public var agentID: String?
    public var sessionID: String?

    public init(status: String = "accepted", action: String, agentID: String? = nil, sessionID: String? = nil) {
        self.status = status
        self.action = action
        self.agentID = agentID
        self.sessionID = sessionID
    }

    enum CodingKeys: String, CodingKey {
        case status, action, agentID = "agent_id", sessionID = "session_id"
    }
}

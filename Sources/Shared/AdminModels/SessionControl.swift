/// The body of `POST /v1/sessions`: `{"agent": "cam-1", "labels": {"take": "7"}}`, or for one
/// session across several agents `{"agents": ["cam-front", "cam-back", "mic-hub"], …}`.
///
/// Decoding is strict: `labels` may be omitted, exactly one of `agent` and `agents` is given,
/// any other key is refused, since a misspelt key (`label`) would otherwise start a session
/// without the labels meant for it.
public struct StartSessionRequest: Codable, Sendable, Equatable {
    /// The ids of connected agents: one, or several for one session across them (their tracks
    /// in this order in the file).
    public var agents: [String]
    /// Keys must be protocol identifiers.
    public var labels: [String: String]

    /// The first (for a session of one agent, the only) agent.
    public var agent: String { agents.first ?? "" }

    public init(agent: String, labels: [String: String] = [:]) {
        self.init(agents: [agent], labels: labels)
    }

    public init(agents: [String], labels: [String: String] = [:]) {
        self.agents = agents
        self.labels = labels
    }

    enum CodingKeys: String, CodingKey, CaseIterable { case agent, agents, labels }

    /// Keys the body held besides `agent`, `agents` and `labels`.
    public struct UnknownFields: Error, Sendable, Equatable {
        public var names: [String]
        public init(names: [String]) { self.names = names }
        public var message: String {
            "unknown field(s) \(names.map { "\"\($0)\"" }.joined(separator: ", ")); expected agent (or agents), labels"
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
        let one = try container.decodeIfPresent(String.self, forKey: .agent)
        let several = try container.decodeIfPresent([String].self, forKey: .agents)
        switch (one, several) {
        case (let agent?, nil): agents = [agent]
        case (nil, let list?) where !list.isEmpty: agents = list
        case (nil, _?):
            throw DecodingError.dataCorruptedError(forKey: .agents, in: container, debugDescription: "agents must name at least one agent")
        case (_?, _?):
            throw DecodingError.dataCorruptedError(forKey: .agents, in: container, debugDescription: "give agent or agents, not both")
        case (nil, nil):
            throw DecodingError.keyNotFound(CodingKeys.agent, .init(codingPath: [], debugDescription: "agent (or agents) is required"))
        }
        labels = try container.decodeIfPresent([String: String].self, forKey: .labels) ?? [:]
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        if agents.count == 1 { try container.encode(agent, forKey: .agent) } else { try container.encode(agents, forKey: .agents) }
        try container.encode(labels, forKey: .labels)
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

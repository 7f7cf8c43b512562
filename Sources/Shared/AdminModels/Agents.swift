import Foundation

/// `GET /v1/agents`: the agents connected now, and those seen before that are not, each
/// sorted by id.
public struct AgentListResponse: Codable, Sendable, Equatable {
    public var agents: [ConnectedAgent]
    public var offlineAgents: [OfflineAgent]
    public init(agents: [ConnectedAgent], offlineAgents: [OfflineAgent] = []) {
        self.agents = agents
        self.offlineAgents = offlineAgents
    }

    enum CodingKeys: String, CodingKey {
        case agents, offlineAgents = "offline_agents"
    }
}

/// An agent the server has seen (the catalog keeps every agent that completed a handshake)
/// that is not connected now.
public struct OfflineAgent: Codable, Sendable, Equatable {
    public var id: String
    /// The address and port of its last connection.
    public var lastAddress: String
    public var softwareVersion: String
    public var firstSeen: Date
    /// When its last connection was last heard from.
    public var lastSeen: Date

    public init(id: String, lastAddress: String, softwareVersion: String, firstSeen: Date, lastSeen: Date) {
        self.id = id
        self.lastAddress = lastAddress
        self.softwareVersion = softwareVersion
        self.firstSeen = firstSeen
        self.lastSeen = lastSeen
    }

    enum CodingKeys: String, CodingKey {
        case id, lastAddress = "last_address", softwareVersion = "software_version", firstSeen = "first_seen", lastSeen = "last_seen"
    }
}

public struct ConnectedAgent: Codable, Sendable, Equatable {
    /// From its certificate / handshake.
    public var id: String
    /// Remote address and port.
    public var address: String
    public var softwareVersion: String
    public var connectedAt: Date
    /// When its last message arrived.
    public var lastSeen: Date
    /// The session open on its connection.
    public var sessionID: String?
    /// The latest heartbeat round-trip time.
    public var roundTripMillis: Double?
    /// How far the agent's monotonic clock is ahead of the server's, from the latest heartbeat
    /// reply (protocol.md §6.4, NTP-style). The clocks count from each host's boot, so the value
    /// is as large as the difference of the boot times; what tells is that it stays put (it
    /// moves when one clock drifts against the other). On one host it is about 0.
    public var clockOffsetMillis: Double?
    /// The agent's latest refusal of a start because a source cannot capture; nil again once
    /// it opens a session.
    public var captureFailure: CaptureFailure?

    public init(id: String, address: String, softwareVersion: String, connectedAt: Date, lastSeen: Date,
                sessionID: String? = nil, roundTripMillis: Double? = nil, clockOffsetMillis: Double? = nil,
                captureFailure: CaptureFailure? = nil) {
        self.id = id
        self.address = address
        self.softwareVersion = softwareVersion
        self.connectedAt = connectedAt
        self.lastSeen = lastSeen
        self.sessionID = sessionID
        self.roundTripMillis = roundTripMillis
        self.clockOffsetMillis = clockOffsetMillis
        self.captureFailure = captureFailure
    }

    enum CodingKeys: String, CodingKey {
        case id, address, softwareVersion = "software_version", connectedAt = "connected_at", lastSeen = "last_seen"
        case sessionID = "session_id", roundTripMillis = "round_trip_millis", clockOffsetMillis = "clock_offset_millis"
        case captureFailure = "capture_failure"
    }

    /// Every key, nil as an explicit `null` (the synthesized encoding would leave it out).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(address, forKey: .address)
        try c.encode(softwareVersion, forKey: .softwareVersion)
        try c.encode(connectedAt, forKey: .connectedAt)
        try c.encode(lastSeen, forKey: .lastSeen)
        try c.encode(sessionID, forKey: .sessionID)
        try c.encode(roundTripMillis, forKey: .roundTripMillis)
        try c.encode(clockOffsetMillis, forKey: .clockOffsetMillis)
        try c.encode(captureFailure, forKey: .captureFailure)
    }
}

/// What an agent said when it could not capture (protocol.md `captureFailed`).
public struct CaptureFailure: Codable, Sendable, Equatable {
    /// The agent's words: the source, its device and the cause.
    public var message: String
    public var at: Date

    public init(message: String, at: Date) {
        self.message = message
        self.at = at
    }
}

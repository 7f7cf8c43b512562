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
    /// How far the agent's monotonic clock is ahead of the server's: ``clock``'s offset, kept
    /// at the top level for clients of the earlier API. The clocks count from each host's boot,
    /// so the value is as large as the difference of the boot times; on one host it is about 0.
    public var clockOffsetMillis: Double?
    /// The clock model's estimate of the agent's clock (docs/architecture.md, "Clock model");
    /// nil until the first reply to the server's clock probes.
    public var clock: AgentClock?
    /// The agent's latest refusal of a start because a source cannot capture; nil again once
    /// it opens a session.
    public var captureFailure: CaptureFailure?

    public init(id: String, address: String, softwareVersion: String, connectedAt: Date, lastSeen: Date,
                sessionID: String? = nil, roundTripMillis: Double? = nil, clockOffsetMillis: Double? = nil, clock: AgentClock? = nil,
                captureFailure: CaptureFailure? = nil) {
        self.id = id
        self.address = address
        self.softwareVersion = softwareVersion
        self.connectedAt = connectedAt
        self.lastSeen = lastSeen
        self.sessionID = sessionID
        self.roundTripMillis = roundTripMillis
        self.clockOffsetMillis = clockOffsetMillis
        self.clock = clock
        self.captureFailure = captureFailure
    }

    enum CodingKeys: String, CodingKey {
        case id, address, softwareVersion = "software_version", connectedAt = "connected_at", lastSeen = "last_seen"
        case sessionID = "session_id", roundTripMillis = "round_trip_millis", clockOffsetMillis = "clock_offset_millis"
        case clock, captureFailure = "capture_failure"
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
        try c.encode(clock, forKey: .clock)
        try c.encode(captureFailure, forKey: .captureFailure)
    }
}

/// How an agent's monotonic clock runs against the server's, as the server's clock model
/// estimates it from the heartbeat exchanges of the agent's connection (protocol.md §6.4).
public struct AgentClock: Codable, Sendable, Equatable {
    /// The agent's clock minus the server's, now.
    public var offsetMillis: Double
    /// How much faster the agent's clock runs, parts per million (0 until the exchanges span 2 minutes).
    public var driftPPM: Double
    /// One standard deviation of the offset as the exchanges scatter; path asymmetry not included.
    public var uncertaintyMillis: Double
    /// The most a constant difference between the path's two directions can move the offset
    /// unseen: half the smallest round trip.
    public var asymmetryBoundMillis: Double
    /// The smallest round trip among the exchanges the estimate rests on.
    public var minRoundTripMillis: Double
    /// How many exchanges the estimate rests on (one a second, over the last ten minutes).
    public var exchanges: Int

    public init(offsetMillis: Double, driftPPM: Double, uncertaintyMillis: Double, asymmetryBoundMillis: Double,
                minRoundTripMillis: Double, exchanges: Int) {
        self.offsetMillis = offsetMillis
        self.driftPPM = driftPPM
        self.uncertaintyMillis = uncertaintyMillis
        self.asymmetryBoundMillis = asymmetryBoundMillis
        self.minRoundTripMillis = minRoundTripMillis
        self.exchanges = exchanges
    }

    enum CodingKeys: String, CodingKey {
        case offsetMillis = "offset_millis", driftPPM = "drift_ppm", uncertaintyMillis = "uncertainty_millis"
        case asymmetryBoundMillis = "asymmetry_bound_millis", minRoundTripMillis = "min_round_trip_millis", exchanges
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

import Foundation

/// `GET /v1/servers`: the record-servers that share this server's catalog (just itself with
/// the embedded SQLite catalog), by id, each as its last heartbeat described it.
public struct ServerListResponse: Codable, Sendable, Equatable {
    /// The id of the server that answered.
    public var this: String
    public var servers: [FleetServer]
    public init(this: String, servers: [FleetServer]) {
        self.this = this
        self.servers = servers
    }
}

public struct FleetServer: Codable, Sendable, Equatable {
    /// `<data directory>/server-id`: stable across restarts, unique per data directory.
    public var id: String
    /// Where agents connect, `host:port` as configured.
    public var ingestAddress: String
    public var softwareVersion: String
    public var startedAt: Date
    public var heartbeatAt: Date
    /// Whether its last heartbeat is recent (servers beat every 5 s; silent for 15 s means down).
    public var alive: Bool
    public var liveSessions: Int
    public var connectedAgents: Int

    public init(id: String, ingestAddress: String, softwareVersion: String, startedAt: Date, heartbeatAt: Date, alive: Bool,
                liveSessions: Int, connectedAgents: Int) {
        self.id = id
        self.ingestAddress = ingestAddress
        self.softwareVersion = softwareVersion
        self.startedAt = startedAt
        self.heartbeatAt = heartbeatAt
        self.alive = alive
        self.liveSessions = liveSessions
        self.connectedAgents = connectedAgents
    }

    /// A server whose last heartbeat is older than this is shown down.
    public static let silenceBeforeDown: TimeInterval = 15

    enum CodingKeys: String, CodingKey {
        case id, ingestAddress = "ingest_address", softwareVersion = "software_version", startedAt = "started_at",
             heartbeatAt = "heartbeat_at", alive, liveSessions = "live_sessions", connectedAgents = "connected_agents"
    }
}

/// `GET /health`. An anonymous caller gets `status` and `uptime_seconds` only; the other keys
/// are left out (not null) unless the caller presented the token.
public struct HealthResponse: Codable, Sendable, Equatable {
    /// `ok`, or why not (`shutting_down`).
    public var status: String
    public var uptimeSeconds: Double
    public var version: String?
    public var connectedAgents: Int?
    public var liveSessions: Int?
    public var dataDirectory: String?
    /// Free space for unprivileged users in the data directory, -1 if unknown.
    public var freeBytes: Int64?

    public init(status: String, uptimeSeconds: Double, version: String? = nil, connectedAgents: Int? = nil,
                liveSessions: Int? = nil, dataDirectory: String? = nil, freeBytes: Int64? = nil) {
        self.status = status
        self.uptimeSeconds = uptimeSeconds
        self.version = version
        self.connectedAgents = connectedAgents
        self.liveSessions = liveSessions
        self.dataDirectory = dataDirectory
        self.freeBytes = freeBytes
    }

    // The synthesized encoding leaves nil keys out, which is what the anonymous form needs.
    enum CodingKeys: String, CodingKey {
        case status, version, uptimeSeconds = "uptime_seconds", connectedAgents = "connected_agents"
        case liveSessions = "live_sessions", dataDirectory = "data_directory", freeBytes = "free_bytes"
    }
}

import Foundation

// The admin API's JSON shapes. They are separate from the backend DTOs on purpose: the DTOs
// may grow fields for internal use, while these are a published contract (docs/admin-api.md).
// Keys are spelled out as snake_case instead of relying on `convertToSnakeCase`, so renaming a
// Swift property can never silently rename a JSON key, and label dictionaries (user data) are
// never touched by a key strategy. Optionals encode as explicit `null` so every object has a
// fixed set of keys.

/// ISO-8601 date handling shared by responses and query parsing.
enum AdminDates {
    /// Output: UTC with milliseconds, e.g. `2024-05-01T10:00:00.250Z`.
    static let output = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
    private static let plain = Date.ISO8601FormatStyle()

    /// Accepts full date-times with `Z` or a numeric offset, with or without fractional seconds.
    static func parse(_ text: String) -> Date? {
        (try? output.parse(text)) ?? (try? plain.parse(text))
    }

    static func format(_ date: Date) -> String { output.format(date) }
}

enum AdminJSON {
    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        // Sorted keys make responses byte-stable, which helps diffing and caching.
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(AdminDates.format(date))
        }
        return encoder
    }

    static func encode(_ value: some Encodable) -> Data {
        do {
            return try encoder().encode(value)
        } catch {
            // Only non-finite doubles can fail here; say so instead of sending half a document.
            return Data(#"{"error":{"code":"internal_error","message":"response could not be encoded"}}"#.utf8)
        }
    }
}

// MARK: Responses

struct ErrorBody: Encodable {
    struct Detail: Encodable {
        var code: String
        var message: String
        var sessionID: String?

        enum CodingKeys: String, CodingKey {
            case code, message, sessionID = "session_id"
        }
    }
    var error: Detail
}

struct HealthJSON: Encodable {
    var status: String
    var version: String?
    var uptimeSeconds: Double
    var connectedAgents: Int?
    var liveSessions: Int?
    var dataDirectory: String?
    var freeBytes: Int64?

    /// Everything, for a caller that presented the token.
    init(full info: HealthInfo) {
        status = info.status
        version = info.version
        uptimeSeconds = info.uptimeSeconds
        connectedAgents = info.connectedAgents
        liveSessions = info.liveSessions
        dataDirectory = info.dataDirectory
        freeBytes = info.freeBytes
    }

    /// Liveness only: an anonymous prober learns neither paths nor load nor version.
    init(public info: HealthInfo) {
        status = info.status
        uptimeSeconds = info.uptimeSeconds
    }

    enum CodingKeys: String, CodingKey {
        case status, version, uptimeSeconds = "uptime_seconds", connectedAgents = "connected_agents"
        case liveSessions = "live_sessions", dataDirectory = "data_directory", freeBytes = "free_bytes"
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(status, forKey: .status)
        try c.encode(uptimeSeconds, forKey: .uptimeSeconds)
        // Detail keys are present only in the authenticated form.
        try c.encodeIfPresent(version, forKey: .version)
        try c.encodeIfPresent(connectedAgents, forKey: .connectedAgents)
        try c.encodeIfPresent(liveSessions, forKey: .liveSessions)
        try c.encodeIfPresent(dataDirectory, forKey: .dataDirectory)
        try c.encodeIfPresent(freeBytes, forKey: .freeBytes)
    }
}

struct AgentJSON: Encodable {
    var info: ConnectedAgentInfo

    enum CodingKeys: String, CodingKey {
        case id, address, softwareVersion = "software_version", connectedAt = "connected_at", lastSeen = "last_seen"
        case sessionID = "session_id", roundTripMillis = "round_trip_millis", captureFailure = "capture_failure"
    }

    enum FailureKeys: String, CodingKey { case message, at }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(info.id, forKey: .id)
        try c.encode(info.address, forKey: .address)
        try c.encode(info.softwareVersion, forKey: .softwareVersion)
        try c.encode(info.connectedAt, forKey: .connectedAt)
        try c.encode(info.lastSeen, forKey: .lastSeen)
        try c.encode(info.sessionID, forKey: .sessionID)
        try c.encode(info.roundTripMillis, forKey: .roundTripMillis)
        if let failure = info.captureFailure {
            var f = c.nestedContainer(keyedBy: FailureKeys.self, forKey: .captureFailure)
            try f.encode(failure.message, forKey: .message)
            try f.encode(failure.at, forKey: .at)
        } else {
            try c.encodeNil(forKey: .captureFailure)
        }
    }
}

struct LiveTrackJSON: Encodable {
    var info: LiveTrackInfo

    enum CodingKeys: String, CodingKey {
        case trackID = "track_id", label, kind, codec, status, samples, bytes, dropped, fps, bitrate
        case lagSeconds = "lag_seconds", error
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(info.trackID, forKey: .trackID)
        try c.encode(info.label, forKey: .label)
        try c.encode(info.kind, forKey: .kind)
        try c.encode(info.codec, forKey: .codec)
        try c.encode(info.status.rawValue, forKey: .status)
        try c.encode(info.samples, forKey: .samples)
        try c.encode(info.bytes, forKey: .bytes)
        try c.encode(info.dropped, forKey: .dropped)
        try c.encode(info.fps, forKey: .fps)
        try c.encode(info.bitrate, forKey: .bitrate)
        try c.encode(info.lagSeconds, forKey: .lagSeconds)
        try c.encode(info.error, forKey: .error)
    }
}

struct LiveSessionJSON: Encodable {
    var info: LiveSessionInfo

    enum CodingKeys: String, CodingKey {
        case id, agentID = "agent_id", labels, state, startedAt = "started_at", path, lastAck = "last_ack", tracks
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(info.id, forKey: .id)
        try c.encode(info.agentID, forKey: .agentID)
        try c.encode(info.labels, forKey: .labels)
        try c.encode(info.state, forKey: .state)
        try c.encode(info.startedAt, forKey: .startedAt)
        try c.encode(info.path, forKey: .path)
        try c.encode(info.lastAck, forKey: .lastAck)
        try c.encode(info.tracks.map(LiveTrackJSON.init(info:)), forKey: .tracks)
    }
}

struct RecordingJSON: Encodable {
    var record: RecordingRecord

    enum CodingKeys: String, CodingKey {
        case id, sessionID = "session_id", agentID = "agent_id", segmentIndex = "segment_index", path, status
        case sizeBytes = "size_bytes", durationSeconds = "duration_seconds", startSeconds = "start_seconds"
        case createdAt = "created_at", finishedAt = "finished_at", error
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(record.id, forKey: .id)
        try c.encode(record.sessionID, forKey: .sessionID)
        try c.encode(record.agentID, forKey: .agentID)
        try c.encode(record.segmentIndex, forKey: .segmentIndex)
        try c.encode(record.path, forKey: .path)
        try c.encode(record.status.rawValue, forKey: .status)
        try c.encode(record.sizeBytes, forKey: .sizeBytes)
        try c.encode(record.durationSeconds, forKey: .durationSeconds)
        try c.encode(record.startSeconds, forKey: .startSeconds)
        try c.encode(record.createdAt, forKey: .createdAt)
        try c.encode(record.finishedAt, forKey: .finishedAt)
        try c.encode(record.error, forKey: .error)
    }
}

struct TrackJSON: Encodable {
    var record: TrackRecord

    enum CodingKeys: String, CodingKey {
        case trackID = "track_id", label, kind, codec, width, height, status, samples, bytes, dropped, error
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(record.trackID, forKey: .trackID)
        try c.encode(record.label, forKey: .label)
        try c.encode(record.kind, forKey: .kind)
        try c.encode(record.codec, forKey: .codec)
        try c.encode(record.width, forKey: .width)
        try c.encode(record.height, forKey: .height)
        try c.encode(record.status.rawValue, forKey: .status)
        try c.encode(record.samples, forKey: .samples)
        try c.encode(record.bytes, forKey: .bytes)
        try c.encode(record.dropped, forKey: .dropped)
        try c.encode(record.error, forKey: .error)
    }
}

struct AgentListJSON: Encodable {
    var agents: [AgentJSON]
}

struct SessionListJSON: Encodable {
    var sessions: [LiveSessionJSON]
}

struct RecordingListJSON: Encodable {
    var recordings: [RecordingJSON]
    /// Echoes the effective limit so a client can tell a full page from a complete answer.
    var limit: Int
}

struct RecordingDetailJSON: Encodable {
    var recording: RecordingJSON
    var tracks: [TrackJSON]
}

/// The answer to a control request: the command was handed to the agent, not yet carried out.
struct AcceptedJSON: Encodable {
    var status = "accepted"
    var action: String
    var agentID: String?
    var sessionID: String?

    enum CodingKeys: String, CodingKey {
        case status, action, agentID = "agent_id", sessionID = "session_id"
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(status, forKey: .status)
        try c.encode(action, forKey: .action)
        try c.encodeIfPresent(agentID, forKey: .agentID)
        try c.encodeIfPresent(sessionID, forKey: .sessionID)
    }
}

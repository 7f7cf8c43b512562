/// What happened to a recording session (and to each of its files): `status` in
/// `GET /v1/recordings`, and the values its `status` filter accepts.
public enum RecordingStatus: String, Codable, Sendable, CaseIterable {
    /// Being written now (or, after a server crash, waiting for its agent to resume).
    case recording
    /// Closed by the agent and finalized.
    case completed
    /// The agent went away and did not resume within the reconnect window; finalized as is.
    case interrupted
    /// Found unfinished after a server crash, not resumed in time, finalized by recovery.
    case recovered
    /// Stopped by an error (for example a full disk); the file holds what was durable.
    case failed
    /// Discarded on request; no file remains.
    case cancelled
}

/// What happened to one track of a session.
public enum TrackStatus: String, Codable, Sendable {
    case active, ended, failed
}

import AdminModels
import Foundation
import Shared

// The live views are reported in the admin API's own types (AdminModels): the registry and
// the sessions fill in exactly what `GET /v1/agents` and `GET /v1/sessions` publish.

/// A connected agent, as the admin API shows it.
typealias ConnectedAgentInfo = ConnectedAgent
typealias OfflineAgentInfo = OfflineAgent
/// What an agent said when it could not capture (protocol.md `captureFailed`).
typealias CaptureFailureInfo = CaptureFailure
/// A session being recorded, with its live per-track figures.
typealias LiveSessionInfo = LiveSession
/// Live per-track figures of a session being recorded.
typealias LiveTrackInfo = LiveTrack

struct HealthInfo: Codable, Sendable, Equatable {
    var status: String
    var version: String
    var uptimeSeconds: Double
    var connectedAgents: Int
    var liveSessions: Int
    var dataDirectory: String
    var freeBytes: Int64
    init(status: String, version: String, uptimeSeconds: Double, connectedAgents: Int, liveSessions: Int,
                dataDirectory: String, freeBytes: Int64) {
        self.status = status
        self.version = version
        self.uptimeSeconds = uptimeSeconds
        self.connectedAgents = connectedAgents
        self.liveSessions = liveSessions
        self.dataDirectory = dataDirectory
        self.freeBytes = freeBytes
    }
}

/// Why a control request failed, mapped to an HTTP status by the admin API.
struct AdminError: Error, Sendable, Equatable {
    enum Kind: String, Sendable { case notFound, conflict, badRequest, unavailable }
    var kind: Kind
    var message: String
    /// The session the error is about, for a client to act on (a `conflict` with a running one).
    var sessionID: String?
    init(_ kind: Kind, _ message: String, sessionID: String? = nil) {
        self.kind = kind
        self.message = message
        self.sessionID = sessionID
    }
}

/// Everything the admin API can ask of the running server. The ingest side implements it;
/// the admin HTTP layer only translates.
protocol AdminBackend: Sendable {
    func health() async -> HealthInfo
    func connectedAgents() async -> [ConnectedAgentInfo]
    /// Every agent the catalog has seen (connected now or not): `unavailable` when it cannot be read.
    func agentsSeen() async throws(AdminError) -> [OfflineAgent]
    /// The servers sharing the catalog, this one first written now: `unavailable` when it cannot be read.
    func fleet() async throws(AdminError) -> ServerListResponse
    func liveSessions() async -> [LiveSessionInfo]
    /// Asks a connected agent to start a session and returns the new session's id once the
    /// agent has opened it (nil if it did not within a few seconds). Refuses with `conflict`
    /// when the agent is recording already: nothing is sent to it then.
    func startSession(agentID: String, labels: [String: String]) async throws(AdminError) -> String?
    /// Starts one session across `agentIDs` (two or more) and returns its id once every agent
    /// has opened its part.
    func startSession(agentIDs: [String], labels: [String: String]) async throws(AdminError) -> String
    func stopSession(id: String) async throws(AdminError)
    func cancelSession(id: String) async throws(AdminError)
    func recordings(_ filter: RecordingFilter) async throws(AdminError) -> [RecordingRecord]
    func recording(id: String) async throws(AdminError) -> (RecordingRecord, [TrackRecord])
    /// Deletes the file and the catalog row; refuses while the recording is being written.
    func deleteRecording(id: String) async throws(AdminError)
    /// The recording's copy in the object store, if it was uploaded.
    func storedRecording(id: String) async throws(AdminError) -> UploadRecord?
    /// Removes the upload row once its object is deleted.
    func forgetUpload(recordingID: String) async throws(AdminError)
    /// The path of a finished recording's file, for download: `conflict` while it is being
    /// written, `notFound` when it is gone or (symlinks resolved) not inside the data directory.
    func finishedRecordingFile(id: String) async throws(AdminError) -> String
    /// A session's files in segment order, for an export of a time range: `notFound` for an
    /// unknown session; files gone from disk or outside the data directory are left out.
    func exportSources(sessionID: String) async throws(AdminError) -> ExportSources
    /// A stream of agent and session events for `GET /v1/events`; nil when too many are open.
    func subscribeEvents() async -> EventBroadcaster.Subscription?
}

/// What an export or a stream of a session reads: its files, whether it is still recording,
/// and when it started (wall times in a request are taken relative to it).
struct ExportSources: Sendable, Equatable {
    var sessionID: String
    var agentID: String
    var startedAt: Date
    /// Still recording: its files grow, and a stream of it waits for more.
    var isLive: Bool
    var sources: [SessionExport.Source]

    init(sessionID: String, agentID: String, startedAt: Date, isLive: Bool, sources: [SessionExport.Source]) {
        self.sessionID = sessionID
        self.agentID = agentID
        self.startedAt = startedAt
        self.isLive = isLive
        self.sources = sources
    }
}

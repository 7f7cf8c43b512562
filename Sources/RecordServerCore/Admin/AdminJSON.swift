import AdminModels
import Foundation

// The server's health and catalog rows into the admin API's types (AdminModels, shared with
// recordctl). The catalog's rows may grow fields for storage; only what these initialisers
// copy is published. (Agents and live sessions are reported in the API's types already.)

extension AdminJSON {
    static func encode(_ value: some Encodable) -> Data {
        do {
            return try encoder().encode(value)
        } catch {
            // Only non-finite doubles can fail here; say so instead of sending half a document.
            return Data(#"{"error":{"code":"internal_error","message":"response could not be encoded"}}"#.utf8)
        }
    }
}

extension HealthResponse {
    /// Everything, for a caller that presented the token.
    init(full info: HealthInfo) {
        self.init(status: info.status, uptimeSeconds: info.uptimeSeconds, version: info.version,
                  connectedAgents: info.connectedAgents, liveSessions: info.liveSessions,
                  dataDirectory: info.dataDirectory, freeBytes: info.freeBytes)
    }

    /// Liveness only: an anonymous prober learns neither paths nor load nor version.
    init(public info: HealthInfo) {
        self.init(status: info.status, uptimeSeconds: info.uptimeSeconds)
    }
}

extension RecordingFile {
    init(_ record: RecordingRecord) {
        self.init(id: record.id, sessionID: record.sessionID, agentID: record.agentID, segmentIndex: record.segmentIndex,
                  path: record.path, status: record.status, sizeBytes: record.sizeBytes,
                  durationSeconds: record.durationSeconds, startSeconds: record.startSeconds, createdAt: record.createdAt,
                  finishedAt: record.finishedAt, error: record.error)
    }
}

extension SessionTrack {
    init(_ record: TrackRecord) {
        self.init(trackID: record.trackID, label: record.label, kind: record.kind, codec: record.codec, width: record.width,
                  height: record.height, status: record.status, samples: record.samples, bytes: record.bytes,
                  dropped: record.dropped, error: record.error)
    }
}

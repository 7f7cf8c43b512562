import Foundation
import PostgresNIO

/// The catalog's models read from PostgreSQL rows, column by column in the order of the
/// `…Columns` lists, with the SQLite backend's conventions (CatalogRecords.swift): dates as
/// seconds since 1970, statuses as raw values, labels as a JSON object with sorted keys. A value
/// the models cannot hold (an unknown status, a negative durable point, labels that are not a
/// JSON object of strings) throws, which the catalog reports as `.corruptRow`.
enum PostgresCatalogRows {
    struct CorruptValue: Error, CustomStringConvertible {
        var description: String
    }

    static let agentColumns = #""id", "lastAddress", "softwareVersion", "firstSeen", "lastSeen""#
    static let sessionColumns = #""id", "agentID", "labels", "status", "createdAt", "endedAt", "error", "directory", "durableSequence", "serverID""#
    static let recordingColumns = #""id", "sessionID", "agentID", "segmentIndex", "path", "status", "sizeBytes", "durationSeconds", "#
        + #""startSeconds", "createdAt", "finishedAt", "error""#
    static let trackColumns = #""sessionID", "trackID", "label", "kind", "codec", "width", "height", "status", "samples", "bytes", "dropped", "error""#

    static func agent(_ row: PostgresRow) throws -> AgentRecord {
        let (id, address, version, firstSeen, lastSeen) = try row.decode((String, String, String, Double, Double).self)
        return AgentRecord(id: id, lastAddress: address, softwareVersion: version, firstSeen: date(firstSeen), lastSeen: date(lastSeen))
    }

    static func session(_ row: PostgresRow) throws -> SessionRecord {
        let (id, agentID, labels, status, createdAt, endedAt, error, directory, durable, serverID) =
            try row.decode((String, String, String, String, Double, Double?, String?, String, Int64?, String?).self)
        var durableSequence: UInt64?
        if let durable {
            guard durable >= 0 else { throw CorruptValue(description: "session \(id) has a negative durableSequence \(durable)") }
            durableSequence = UInt64(durable)
        }
        return SessionRecord(id: id, agentID: agentID, labels: try decodeLabels(labels), status: try recordingStatus(status),
                             createdAt: date(createdAt), endedAt: endedAt.map(date), error: error, directory: directory,
                             durableSequence: durableSequence, serverID: serverID)
    }

    static let uploadColumns = #""recordingID", "objectKey", "etag", "sizeBytes", "uploadedAt", "localRemoved""#

    static func upload(_ row: PostgresRow) throws -> UploadRecord {
        let (id, key, etag, size, uploadedAt, removed) = try row.decode((String, String, String, Int64, Double, Bool).self)
        return UploadRecord(recordingID: id, objectKey: key, etag: etag, sizeBytes: size, uploadedAt: date(uploadedAt), localRemoved: removed)
    }

    static let serverColumns = #""id", "ingestAddress", "softwareVersion", "startedAt", "heartbeatAt", "liveSessions", "connectedAgents""#

    static func server(_ row: PostgresRow) throws -> ServerRecord {
        let (id, address, version, startedAt, heartbeatAt, live, agents) = try row.decode((String, String, String, Double, Double, Int64, Int64).self)
        return ServerRecord(id: id, ingestAddress: address, softwareVersion: version, startedAt: date(startedAt), heartbeatAt: date(heartbeatAt),
                            liveSessions: Int(live), connectedAgents: Int(agents))
    }

    static func recording(_ row: PostgresRow) throws -> RecordingRecord {
        let (id, sessionID, agentID, segment, path, status, size, duration, start, createdAt, finishedAt, error) =
            try row.decode((String, String, String, Int64, String, String, Int64, Double, Double, Double, Double?, String?).self)
        return RecordingRecord(id: id, sessionID: sessionID, agentID: agentID, segmentIndex: Int(segment), path: path,
                               status: try recordingStatus(status), sizeBytes: size, durationSeconds: duration, startSeconds: start,
                               createdAt: date(createdAt), finishedAt: finishedAt.map(date), error: error)
    }

    static func track(_ row: PostgresRow) throws -> TrackRecord {
        let (sessionID, trackID, label, kind, codec, width, height, status, samples, bytes, dropped, error) =
            try row.decode((String, Int64, String, String, String, Int64, Int64, String, Int64, Int64, Int64, String?).self)
        guard let trackStatus = TrackStatus(rawValue: status) else { throw CorruptValue(description: "unknown track status \"\(status)\"") }
        return TrackRecord(sessionID: sessionID, trackID: Int(trackID), label: label, kind: kind, codec: codec, width: Int(width),
                           height: Int(height), status: trackStatus, samples: samples, bytes: bytes, dropped: dropped, error: error)
    }

    /// Labels as the SQLite backend stores them: a JSON object, keys sorted.
    static func encodeLabels(_ labels: [String: String]) throws(CatalogError) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do { return String(decoding: try encoder.encode(labels), as: UTF8.self) } catch {
            throw CatalogError(.queryFailed, "cannot encode labels", underlying: "\(error)")
        }
    }

    static func decodeLabels(_ text: String) throws -> [String: String] {
        do { return try JSONDecoder().decode([String: String].self, from: Data(text.utf8)) } catch {
            throw CorruptValue(description: "labels \(text.prefix(80)) are not a JSON object of strings")
        }
    }

    private static func recordingStatus(_ raw: String) throws -> RecordingStatus {
        guard let status = RecordingStatus(rawValue: raw) else { throw CorruptValue(description: "unknown status \"\(raw)\"") }
        return status
    }

    private static func date(_ seconds: Double) -> Date { Date(timeIntervalSince1970: seconds) }
}

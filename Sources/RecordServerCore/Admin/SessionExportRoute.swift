import AdminModels
import Foundation
import Hummingbird
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Shared

/// `GET /v1/sessions/{id}/export?from=&to=&tracks=`: a time range of a session, across its
/// segments, as one regular MP4 built without re-encoding (``SessionExport``), streamed as it is
/// built. Planning reads only the files' tables, on the thread pool; the media bytes are then
/// copied from the session's files in ``RecordingDownload/chunkBytes`` reads, paced by the client.
struct SessionExportRoute: Sendable {
    static let queryKeys: Set<String> = ["from", "to", "tracks"]
    /// Exports running at once; each holds its plan (up to ``SessionExport/maxSamples``
    /// samples' tables) and its open files.
    static let maxConcurrent = 4

    let slots: ExportSlots
    let threadPool: NIOThreadPool

    func response(sessionID: String, query: [(key: String, value: String)], backend: any AdminBackend) async throws -> Response {
        let found = try await backend.exportSources(sessionID: sessionID)
        let request = try Self.request(query, sessionStart: found.startedAt)
        guard slots.acquire() else {
            throw AdminAPIError(status: .serviceUnavailable, code: "unavailable",
                                message: "\(Self.maxConcurrent) exports are running already; try again when one has finished")
        }
        let export: SessionExport
        do {
            export = try await threadPool.runIfActive { () throws(ExportError) in try SessionExport.plan(sources: found.sources, request: request) }
        } catch {
            slots.release()
            throw (error as? ExportError).map(Self.apiError) ?? error
        }
        let name = "\(found.agentID)-\(sessionID)-\(Self.seconds(export.fromNanos))-\(Self.seconds(export.toNanos)).mp4"
        var headers: HTTPFields = [
            .contentType: "video/mp4",
            .contentDisposition: "attachment; filename=\"\(name)\"",
            .cacheControl: "private, no-cache",
        ]
        // What the export really covers: `from` moved to the start of the picture on screen,
        // `to` clamped to the end of the recording.
        headers[.init("X-Export-From")!] = Self.seconds(export.fromNanos)
        headers[.init("X-Export-To")!] = Self.seconds(export.toNanos)
        headers[.init("X-Export-Tracks")!] = export.tracks.map(\.label).joined(separator: ",")
        let pool = threadPool, slots = self.slots
        return Response(status: .ok, headers: headers, body: ResponseBody(contentLength: Int(export.size)) { writer in
            defer {
                export.close()
                slots.release()
            }
            try await writer.write(ByteBuffer(bytes: export.head))
            for piece in export.pieces {
                var done: UInt64 = 0
                while done < piece.length {
                    let count = Int(min(UInt64(RecordingDownload.chunkBytes), piece.length - done))
                    let at = piece.offset + done
                    let bytes = try await pool.runIfActive { () throws(ExportError) in try export.read(file: piece.file, offset: at, count: count) }
                    try await writer.write(ByteBuffer(bytes: bytes))
                    done += UInt64(count)
                }
            }
            try await writer.finish(nil)
        })
    }

    /// Session seconds with millisecond precision, as the headers and file name give them.
    static func seconds(_ nanos: Int64) -> String { String(format: "%.3f", Double(nanos) / 1e9) }

    /// `from` and `to`: seconds of session time (`12.5`) or a date-time (RFC 3339), taken
    /// relative to the session's start on the server; `tracks`: comma-separated labels.
    static func request(_ query: [(key: String, value: String)], sessionStart: Date) throws(AdminAPIError) -> SessionExport.Request {
        var values: [String: String] = [:]
        for (key, value) in query {
            guard queryKeys.contains(key) else { throw .badRequest("unknown query parameter \"\(key)\"; expected from, to, tracks") }
            guard values.updateValue(value, forKey: key) == nil else { throw .badRequest("query parameter \"\(key)\" given more than once") }
        }
        let from = try values["from"].map { v throws(AdminAPIError) in try sessionNanos(v, name: "from", sessionStart: sessionStart) } ?? 0
        let to = try values["to"].map { v throws(AdminAPIError) in try sessionNanos(v, name: "to", sessionStart: sessionStart) }
        var labels: [String]?
        if let list = values["tracks"] {
            let names = list.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard !names.contains(where: \.isEmpty) else { throw .badRequest("tracks \"\(list)\" has an empty name; give labels separated by commas, such as back,mic") }
            labels = names
        }
        return SessionExport.Request(fromNanos: from, toNanos: to, labels: labels)
    }

    /// Longest session time accepted: 10 years, far from overflowing nanoseconds.
    static let maxSeconds = 315_360_000.0

    static func sessionNanos(_ text: String, name: String, sessionStart: Date) throws(AdminAPIError) -> Int64 {
        let seconds: Double
        if let number = Double(text), number.isFinite {
            seconds = number
        } else if let date = AdminDates.parse(text) {
            seconds = date.timeIntervalSince(sessionStart)
        } else {
            throw .badRequest("invalid \(name) \"\(text)\"; expected seconds from the session's start (12.5) or a date-time such as 2026-05-01T10:00:03.250Z")
        }
        guard seconds >= 0 else { throw .badRequest("\(name) \"\(text)\" is before the session's start") }
        guard seconds <= maxSeconds else { throw .badRequest("\(name) \"\(text)\" is more than ten years after the session's start") }
        return Int64((seconds * 1e9).rounded())
    }

    static func apiError(_ error: ExportError) -> AdminAPIError {
        switch error.code {
        case .invalidRequest: AdminAPIError(status: .badRequest, code: "bad_request", message: error.message)
        case .emptyRange: AdminAPIError(status: .unprocessableContent, code: "empty_range", message: error.message)
        case .configurationChanges: AdminAPIError(status: .conflict, code: "configuration_changes", message: error.message)
        case .tooLarge: AdminAPIError(status: .contentTooLarge, code: "too_large", message: error.message)
        case .notOurFile, .io: AdminAPIError(status: .internalServerError, code: "unreadable_recording", message: error.message)
        }
    }
}

/// A counter of running exports with a ceiling.
final class ExportSlots: Sendable {
    private let running = NIOLockedValueBox(0)
    let limit: Int

    init(limit: Int) { self.limit = limit }

    func acquire() -> Bool {
        running.withLockedValue { count in
            guard count < limit else { return false }
            count += 1
            return true
        }
    }

    func release() { running.withLockedValue { $0 -= 1 } }
}

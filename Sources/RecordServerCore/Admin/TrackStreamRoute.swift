import Foundation
import Hummingbird
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ServiceLifecycle
import Shared

/// `GET /v1/sessions/{id}/tracks/{label}/stream?from=`: one track as a fragmented MP4 for a
/// browser's Media Source Extensions (``TrackStream``): the init segment, then fragments built
/// from the session's files without re-encoding. A finished session's stream ends after its
/// last sample; a live one starts at the newest durable keyframe (unless `from` says
/// otherwise) and follows the recording, ``pollInterval`` behind the durable fragments, until
/// the session ends, the client leaves or the server stops.
struct TrackStreamRoute: Sendable {
    static let queryKeys: Set<String> = ["from"]
    /// Streams open at once (a console shows two cameras and sound per session).
    static let maxConcurrent = 32
    static let pollInterval: Duration = .milliseconds(500)

    let slots: ExportSlots
    let threadPool: NIOThreadPool

    func response(sessionID: String, label: String, query: [(key: String, value: String)], backend: any AdminBackend) async throws -> Response {
        var values: [String: String] = [:]
        for (key, value) in query {
            guard Self.queryKeys.contains(key) else { throw AdminAPIError.badRequest("unknown query parameter \"\(key)\"; expected from") }
            guard values.updateValue(value, forKey: key) == nil else { throw AdminAPIError.badRequest("query parameter \"\(key)\" given more than once") }
        }
        let found = try await backend.exportSources(sessionID: sessionID)
        let from = try values["from"].map { v throws(AdminAPIError) in
            try SessionExportRoute.sessionNanos(v, name: "from", sessionStart: found.startedAt)
        }
        guard slots.acquire() else {
            throw AdminAPIError(status: .serviceUnavailable, code: "unavailable",
                                message: "\(Self.maxConcurrent) track streams are open already; close one")
        }
        let stream: TrackStream
        do {
            // A finished session plays from its start; a live one from its newest keyframe.
            let start = from ?? (found.isLive ? nil : 0)
            stream = try await threadPool.runIfActive { () throws(ExportError) in try TrackStream.open(sources: found.sources, label: label, fromNanos: start) }
        } catch {
            slots.release()
            throw (error as? ExportError).map(SessionExportRoute.apiError) ?? error
        }
        var headers: HTTPFields = [.contentType: stream.mimeType, .cacheControl: "no-store"]
        headers[.init("X-Stream-Start")!] = SessionExportRoute.seconds(stream.startNanos)
        let pool = threadPool, slots = self.slots
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            defer { slots.release() }
            let stopping = NIOLockedValueBox(false)
            try await withGracefulShutdownHandler {
                try await writer.write(ByteBuffer(bytes: stream.initSegment))
                var live = found.isLive
                while true {
                    let holdingLast = live
                    while let fragment = try await pool.runIfActive({ () throws(ExportError) in try stream.nextFragment(holdingLast: holdingLast) }) {
                        try await writer.write(ByteBuffer(bytes: fragment))
                    }
                    guard live, !stopping.withLockedValue({ $0 }) else { break }
                    try await Task.sleep(for: Self.pollInterval)
                    let now = try await backend.exportSources(sessionID: sessionID)
                    live = now.isLive
                    // Untyped: a Void closure with typed throws crashes Swift 6.3's LifetimeDependenceDiagnostics pass.
                    try await pool.runIfActive { () throws in try stream.refresh(sources: now.sources) }
                }
            } onGracefulShutdown: {
                stopping.withLockedValue { $0 = true }
            }
            try await writer.finish(nil)
        })
    }
}

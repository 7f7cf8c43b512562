import AdminModels
import Foundation
import Hummingbird
import NIOCore
import ServiceLifecycle

/// The route handlers. They only translate: HTTP input → validated arguments → one backend
/// call → JSON. All policy (what may be stopped, deleted, …) lives behind `AdminBackend`.
struct AdminRoutes: Sendable {
    static let healthPath = "/health"

    let backend: any AdminBackend
    let metrics: ServerMetrics
    let token: BearerToken
    let maxBodyBytes: Int
    var objectStore: RecordingObjectStore? = nil
    let exports = SessionExportRoute(slots: ExportSlots(limit: SessionExportRoute.maxConcurrent), threadPool: .singleton)
    let streams = TrackStreamRoute(slots: ExportSlots(limit: TrackStreamRoute.maxConcurrent), threadPool: .singleton)

    func register(on router: Router<BasicRequestContext>) {
        router.get("/health") { request, _ in await self.health(request) }
        router.get("/metrics") { _, _ in self.metricsPage() }

        let v1 = router.group("/v1")
        v1.get("/openapi.yaml") { _, _ in OpenAPIDocument.response() }
        v1.get("/agents") { _, _ in
            let connected = await self.backend.connectedAgents()
            let online = Set(connected.map(\.id))
            let offline = try await self.backend.agentsSeen().filter { !online.contains($0.id) }
            return AdminResponses.json(AgentListResponse(agents: connected, offlineAgents: offline))
        }
        v1.get("/servers") { _, _ in AdminResponses.json(try await self.backend.fleet()) }
        v1.get("/sessions") { _, _ in
            AdminResponses.json(SessionListResponse(sessions: await self.backend.liveSessions()))
        }
        v1.post("/sessions") { request, _ in try await self.startSession(request) }
        v1.post("/sessions/{id}/stop") { _, context in
            let id = try Self.pathID(context)
            try await self.backend.stopSession(id: id)
            return AdminResponses.json(ControlResponse(action: "stop", sessionID: id), status: .accepted)
        }
        v1.post("/sessions/{id}/cancel") { _, context in
            let id = try Self.pathID(context)
            try await self.backend.cancelSession(id: id)
            return AdminResponses.json(ControlResponse(action: "cancel", sessionID: id), status: .accepted)
        }
        v1.get("/sessions/{id}/export") { request, context in
            let query = request.uri.queryParameters.map { (key: String($0.key), value: String($0.value)) }
            return try await self.exports.response(sessionID: try Self.pathID(context), query: query, backend: self.backend)
        }
        v1.get("/sessions/{id}/tracks/{label}/stream") { request, context in
            let query = request.uri.queryParameters.map { (key: String($0.key), value: String($0.value)) }
            guard let label = context.parameters.get("label") else { throw AdminAPIError.badRequest("missing track label in path") }
            return try await self.streams.response(sessionID: try Self.pathID(context), label: label.removingPercentEncoding ?? label,
                                                   query: query, backend: self.backend)
        }
        v1.get("/recordings") { request, _ in
            let query = request.uri.queryParameters.map { (key: String($0.key), value: String($0.value)) }
            let filter = try AdminRequests.recordingFilter(query)
            let records = try await self.backend.recordings(filter)
            return AdminResponses.json(RecordingListResponse(recordings: records.map(RecordingFile.init), limit: filter.limit))
        }
        v1.get("/recordings/{id}") { _, context in
            let (record, tracks) = try await self.backend.recording(id: try Self.pathID(context))
            return AdminResponses.json(RecordingDetailResponse(recording: RecordingFile(record), tracks: tracks.map(SessionTrack.init)))
        }
        v1.get("/events") { _, _ in try await self.events() }
        v1.get("/recordings/{id}/file") { request, context in try await self.download(request, context) }
        v1.head("/recordings/{id}/file") { request, context in try await self.download(request, context) }
        v1.delete("/recordings/{id}") { _, context in
            let id = try Self.pathID(context)
            let upload = self.objectStore == nil ? nil : try await self.backend.storedRecording(id: id)
            try await self.backend.deleteRecording(id: id)
            if let store = self.objectStore, let upload {
                // The file and its row are gone; the object goes too, then its row. A failure
                // leaves the upload row naming the object: the uploader's next passes delete it
                // (RecordingUploader.purgeDeletedRecordings), and the answer names the key.
                do {
                    try await store.client.deleteObject(key: store.relativeKey(upload.objectKey))
                    try await self.backend.forgetUpload(recordingID: id)
                } catch {
                    throw AdminError(.unavailable, "recording \(id) is deleted here, but its object \(upload.objectKey) could not be: \(error)")
                }
            }
            return Response(status: .noContent)
        }
    }

    /// Open to anyone, but only a caller presenting the token sees paths, load and version.
    /// Answers 503 unless the backend says "ok", so a load balancer stops sending work to a
    /// server that is shutting down.
    func health(_ request: Request) async -> Response {
        let info = await backend.health()
        let authorized = token.authorizes(headerValue: request.headers[.authorization])
        let status: HTTPResponse.Status = info.status == "ok" ? .ok : .serviceUnavailable
        return AdminResponses.json(authorized ? HealthResponse(full: info) : HealthResponse(public: info), status: status)
    }

    func metricsPage() -> Response {
        Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                 body: ResponseBody(byteBuffer: ByteBuffer(string: metrics.exposition())))
    }

    func startSession(_ request: Request) async throws -> Response {
        // Refuse early on a declared oversize body instead of reading it.
        if let length = request.headers[.contentLength].flatMap(Int.init), length > maxBodyBytes {
            throw AdminAPIError.payloadTooLarge(limit: maxBodyBytes)
        }
        let buffer = try await request.body.collect(upTo: maxBodyBytes)
        let body = Data(buffer.readableBytesView)
        let parsed = try AdminRequests.startSession(body)
        guard parsed.agents.count == 1 else {
            // A session across agents answers once every agent has opened its part (201), or
            // with the reason it could not start.
            let sessionID = try await backend.startSession(agentIDs: parsed.agents, labels: parsed.labels)
            return AdminResponses.json(ControlResponse(status: "started", action: "start", agentID: parsed.agent, sessionID: sessionID),
                                       status: .created)
        }
        let sessionID = try await backend.startSession(agentID: parsed.agent, labels: parsed.labels)
        // 201 with the new session's id once the agent opened it; 202 if it has not yet.
        return AdminResponses.json(ControlResponse(status: sessionID == nil ? "accepted" : "started", action: "start",
                                                agentID: parsed.agent, sessionID: sessionID),
                                   status: sessionID == nil ? .accepted : .created)
    }

    /// Server-sent events (text/event-stream): one `event:`/`data:` pair per ``ServerEvent``,
    /// from now on, until the client leaves or the server stops.
    func events() async throws -> Response {
        guard let subscription = await backend.subscribeEvents() else {
            throw AdminAPIError(status: .serviceUnavailable, code: "unavailable",
                                message: "\(EventBroadcaster.maxSubscribers) event streams are open already; close one")
        }
        let headers: HTTPFields = [.contentType: "text/event-stream; charset=utf-8", .cacheControl: "no-cache"]
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            // A first line at once, so the client knows it is subscribed before any event.
            try await writer.write(ByteBuffer(string: ": record-server events\n\n"))
            try await withGracefulShutdownHandler {
                for await item in subscription.events {
                    switch item {
                    case .event(let event):
                        let data = String(decoding: AdminJSON.encode(event), as: UTF8.self)
                        try await writer.write(ByteBuffer(string: "event: \(event.type.rawValue)\ndata: \(data)\n\n"))
                    case .keepAlive:
                        try await writer.write(ByteBuffer(string: ": keep-alive\n\n"))
                    }
                }
            } onGracefulShutdown: {
                subscription.finish()
            }
            try await writer.finish(nil)
        })
    }

    /// A finished recording's file, streamed from disk with ranges and validators; from the
    /// object store when the local copy is gone and the recording was uploaded.
    func download(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let id = try Self.pathID(context)
        do {
            let path = try await backend.finishedRecordingFile(id: id)
            return try await RecordingDownload(path: path, downloadName: id + ".mp4", threadPool: .singleton).response(to: request)
        } catch let error as AdminError where error.kind == .notFound {
            guard let store = objectStore, let upload = try await backend.storedRecording(id: id) else { throw error }
            return try await RecordingDownload(source: ObjectDownloadSource(store: store, upload: upload), downloadName: id + ".mp4")
                .response(to: request)
        }
    }

    static func pathID(_ context: BasicRequestContext) throws(AdminAPIError) -> String {
        guard let id = context.parameters.get("id") else { throw .badRequest("missing id in path") }
        // The router hands the raw segment over; ids are plain identifiers, but decode anyway
        // so a client that escapes characters gets the id it meant.
        return try AdminRequests.validatedID(id.removingPercentEncoding ?? id, what: "id")
    }
}

import Hummingbird
import HummingbirdTLS
import Logging
import NIOCore
import NIOSSL

/// The admin HTTP API of `record-server` (docs/admin-api.md): status, control of agents'
/// sessions, the recordings catalog and the Prometheus `/metrics` page.
///
/// Run it either inside the server's `ServiceGroup`:
/// ```swift
/// let admin = AdminServer(port: 8080, token: token, backend: registry, metrics: metrics, logger: logger)
/// let group = ServiceGroup(configuration: .init(services: [admin.makeApplication(), …], logger: logger))
/// try await group.run()
/// ```
/// or on its own with ``run()``. Either way ``waitUntilRunning()`` returns the bound port once
/// the listener is up (useful with port 0).
struct AdminServer: Sendable {
    /// Loopback only by default: the API can start and delete recordings, so exposing it on a
    /// network interface must be an explicit choice.
    static let defaultHost = "127.0.0.1"
    /// Upper bound on a request body; the only body the API accepts is a small JSON object.
    static let maxBodyBytes = 64 * 1024

    let host: String
    /// The configured port (0 = any free port; see ``boundPort``).
    let port: Int
    private let token: BearerToken
    /// HTTPS when set (admin.tls); plain HTTP otherwise.
    private let tls: TLSConfiguration?
    private let backend: any AdminBackend
    /// Where recordings whose local copy is gone are served from.
    private let objectStore: RecordingObjectStore?
    private let metrics: ServerMetrics
    private let logger: Logger
    private let listening = ListeningPort()
    /// Web console sign-ins, shared by every application this server builds.
    private let consoleSessions = ConsoleSessions()

    /// - Parameters:
    ///   - host: address to listen on; defaults to loopback.
    ///   - port: TCP port; 0 picks a free one (learn it with ``waitUntilRunning()``).
    ///   - token: the bearer token every route but `GET /health` requires. An empty token locks
    ///     every protected route (fail closed) and is reported at `critical` level.
    ///   - backend: what the routes query and command.
    ///   - metrics: rendered at `GET /metrics`.
    ///   - logger: for the listener and one debug line per request (token and headers never logged).
    ///   - tls: serve HTTPS with this configuration (the console's cookie is then `Secure`).
    init(host: String = AdminServer.defaultHost, port: Int, token: String, backend: any AdminBackend,
                metrics: ServerMetrics, logger: Logger, tls: TLSConfiguration? = nil, objectStore: RecordingObjectStore? = nil) {
        self.host = host
        self.objectStore = objectStore
        self.port = port
        self.tls = tls
        self.token = BearerToken(token)
        self.backend = backend
        self.metrics = metrics
        self.logger = logger
        if !self.token.isUsable {
            logger.critical("admin API token is empty; every route except /health will answer 401")
        }
    }

    /// Builds the Hummingbird application: a `Service`, so the lead can put it in a
    /// `ServiceGroup` (graceful shutdown then closes the listener and drains requests).
    /// Each call builds a fresh application sharing this server's ``boundPort`` record.
    func makeApplication() throws -> some ApplicationProtocol {
        let listening = self.listening
        let logger = self.logger
        return Application(
            router: makeRouter(),
            server: try tls.map { try .tls(.http1(), tlsConfiguration: $0) } ?? .http1(),
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: nil),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                logger.info("admin API listening", metadata: ["address": "\(channel.localAddress?.description ?? "?")"])
                await listening.set(port)
            },
            logger: logger
        )
    }

    /// Every route of the listener behind its middleware (the OpenAPI document's test lists
    /// its routes: `router.routes`).
    func makeRouter() -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        // Order matters: middleware applies to routes added after it, and the error middleware
        // must be outermost so that a 401 from auth is rendered as JSON too.
        router.add(middleware: AdminErrorMiddleware(logger: logger))
        router.add(middleware: AdminAuthMiddleware(token: token, console: consoleSessions))
        AdminRoutes(backend: backend, metrics: metrics, token: token, maxBodyBytes: Self.maxBodyBytes, objectStore: objectStore)
            .register(on: router)
        ConsoleRoutes(token: token, sessions: consoleSessions, secureCookies: tls != nil).register(on: router)
        return router
    }

    /// Runs the API until the task is cancelled or the listener fails. Prefer adding
    /// ``makeApplication()`` to the server's `ServiceGroup`; this is for running it alone.
    func run() async throws {
        do {
            try await makeApplication().run()
        } catch {
            await listening.finish()
            throw error
        }
        await listening.finish()
    }

    /// The port actually bound, or nil before the listener is up.
    var boundPort: Int? {
        get async { await listening.port }
    }

    /// Suspends until the listener is up and returns its port. Throws ``AdminServerError/cancelled``
    /// if the waiting task is cancelled, and ``AdminServerError/stoppedBeforeListening`` if ``run()``
    /// ended first (when the application runs in a `ServiceGroup`, cancel the waiter on failure).
    func waitUntilRunning() async throws(AdminServerError) -> Int {
        try await listening.wait()
    }
}

/// Why ``AdminServer/waitUntilRunning()`` returned without a port.
enum AdminServerError: Error, Sendable, Equatable {
    case cancelled
    case stoppedBeforeListening
}

/// Holds the bound port and wakes those waiting for it.
private actor ListeningPort {
    private(set) var port: Int?
    private var finished = false
    private var waiters: [Int: CheckedContinuation<Int, any Error>] = [:]
    private var nextWaiter = 0

    func set(_ port: Int) {
        self.port = port
        for waiter in waiters.values { waiter.resume(returning: port) }
        waiters = [:]
    }

    /// The application ended; a waiter that never saw a port would otherwise wait forever.
    func finish() {
        finished = true
        for waiter in waiters.values { waiter.resume(throwing: AdminServerError.stoppedBeforeListening) }
        waiters = [:]
    }

    func wait() async throws(AdminServerError) -> Int {
        if let port { return port }
        if finished { throw .stoppedBeforeListening }
        let id = nextWaiter
        nextWaiter += 1
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    if Task.isCancelled {
                        continuation.resume(throwing: AdminServerError.cancelled)
                    } else {
                        waiters[id] = continuation
                    }
                }
            } onCancel: {
                Task { await self.cancel(id) }
            }
        } catch let error as AdminServerError {
            throw error
        } catch {
            throw .cancelled
        }
    }

    private func cancel(_ id: Int) {
        waiters.removeValue(forKey: id)?.resume(throwing: AdminServerError.cancelled)
    }
}

import CMallocTuning
import Foundation
public import Logging
import NIOCore
import NIOPosix
import NIOSSL
import RecordingTLS
import ServiceLifecycle
import UnixSignals
import Shared

/// The whole server, composed from its configuration: storage, catalog, TLS ingest, session
/// registry, admin API and housekeeping, run as services that shut down gracefully together.
public final class RecordServer: Sendable {
    public let configuration: ServerConfiguration
    let registry: SessionRegistry
    let catalog: any RecordingCatalog
    public let metrics: ServerMetrics
    private let storage: StorageLayout
    /// Held from construction until the server stops: one server per data directory.
    private let lock: DataDirectoryLock
    private let ingest: IngestServer
    private let admin: AdminServer?
    /// Where finished recordings are uploaded; nil without `objectStore`.
    private let objectStore: RecordingObjectStore?
    /// Ships recording sessions to the object store while they record; nil without `objectStore`.
    private let liveShipper: LiveShipper?
    /// Posts events to the configured webhook receivers; nil when there are none.
    private let webhooks: WebhookDispatcher?
    private let logger: Logger
    private let ports = PortRecord()

    /// - Parameter clock: what resume windows and housekeeping run on; tests pass a manual one.
    public init(configuration: ServerConfiguration, logger: Logger, clock: any ServerClock = SystemServerClock()) throws {
        try configuration.validate()
        self.configuration = configuration
        self.logger = logger
        // Risky but legal settings (a world-readable key, the admin API on every interface,
        // fsync off, …) are said once at start-up, where an operator looks.
        for warning in configuration.warnings { logger.warning("configuration: \(warning)") }
        storage = try StorageLayout(dataDirectory: configuration.dataDirectory)
        try storage.prepare()
        lock = try DataDirectoryLock(dataDirectory: configuration.dataDirectory)
        let serverID = try ServerIdentity.load(dataDirectory: configuration.dataDirectory)
        switch try configuration.catalogLocation() {
        case .embedded: catalog = try Catalog(path: storage.catalogPath, serverID: serverID)
        case .postgres(let address):
            catalog = try PostgresCatalog(address: address, serverID: serverID, logger: logger)
            logger.notice("catalog: \(address), this server is \(serverID)")
        }
        metrics = ServerMetrics()

        var tls: TLSConfiguration?
        if configuration.insecurePlaintext {
            logger.critical("INSECURE: TLS is OFF (insecurePlaintext). Agents are not authenticated and media crosses the network in clear text. Development only.")
        } else {
            tls = try TLSConfigurations.server(certificatePEMPath: configuration.tls.certificate, privateKeyPEMPath: configuration.tls.privateKey,
                                               caPEMPath: configuration.tls.caCertificate,
                                               requireClientCertificate: configuration.tls.requireClientCertificate)
        }
        let revocationFile = try configuration.tls.revocationList.map { path throws in try RevocationFile(path: path, logger: logger) }
        // The same reading of the file that validate() checked, not a second one.
        let tokens = try configuration.loadBearerTokens()
        let authenticator = AgentAuthenticator(requireClientCertificate: configuration.tls.requireClientCertificate,
                                               bearerTokens: tokens, revocationFile: revocationFile, insecurePlaintext: configuration.insecurePlaintext)
        ingest = IngestServer(host: configuration.ingest.host, port: configuration.ingest.port, tls: tls, authenticator: authenticator,
                              readCoalescing: .milliseconds(configuration.readCoalescingMillis), budgets: configuration.ingestBudgets)

        let objectStore = try configuration.objectStore.map { try RecordingObjectStore(configuration: $0, dataDirectory: configuration.dataDirectory) }
        self.objectStore = objectStore
        let webhookTargets = try configuration.webhookTargets()
        webhooks = webhookTargets.isEmpty ? nil : WebhookDispatcher(targets: webhookTargets, metrics: metrics, logger: logger)
        let storage = self.storage
        let metrics = self.metrics, logger = self.logger
        let liveShipper = objectStore.map { LiveShipper(store: $0, clock: clock, metrics: metrics, logger: logger) }
        self.liveShipper = liveShipper
        registry = SessionRegistry(catalog: catalog, settings: configuration.sessionSettings, maxSessions: configuration.maxSessions,
                                   maxSessionsPerAgent: configuration.maxSessionsPerAgent, metrics: metrics,
                                   logger: logger, dataDirectory: configuration.dataDirectory, clock: clock,
                                   events: EventBroadcaster(sinks: webhooks.map { [$0] } ?? []), liveShipper: liveShipper) { agentID, sessionID, date in
            try storage.locate(agentID: agentID, sessionID: sessionID, date: date)
        }
        let registry = self.registry
        liveShipper?.setDelivery { agentID, connection, message in await registry.deliver(message, to: agentID, connection: connection) }
        if configuration.admin.enabled {
            var adminTLS: TLSConfiguration?
            if configuration.admin.tls {
                adminTLS = try TLSConfigurations.server(certificatePEMPath: configuration.tls.certificate, privateKeyPEMPath: configuration.tls.privateKey,
                                                        caPEMPath: configuration.tls.caCertificate, requireClientCertificate: false)
                // Operators come with a browser, not a client certificate: asking for one makes
                // browsers offer a choice of certificates. The admin token authenticates.
                adminTLS?.certificateVerification = .none
            }
            admin = AdminServer(host: configuration.admin.host, port: configuration.admin.port,
                                token: try configuration.resolvedAdminToken(), backend: registry, metrics: metrics, logger: logger,
                                tls: adminTLS, objectStore: objectStore)
        } else {
            admin = nil
        }
    }

    /// Runs until SIGTERM/SIGINT, then stops accepting, tells agents to resume later, suspends
    /// every live session (resumable after the restart) and exits within `shutdownGraceSeconds`.
    public func run() async throws {
        let group = ServiceGroup(configuration: try serviceGroupConfiguration(signals: [.sigterm, .sigint]))
        defer { lock.release() }
        try await group.run()
    }

    /// Starts in the background (for tests and embedding); `stop()` shuts down gracefully.
    public func start() async throws -> RunningServer {
        let group = ServiceGroup(configuration: try serviceGroupConfiguration(signals: []))
        let lock = self.lock
        let task = Task {
            defer { lock.release() }
            try await group.run()
        }
        let ingestPort = try await ports.waitForIngest()
        let adminPort = admin == nil ? nil : try await admin!.waitUntilRunning()
        return RunningServer(ingestPort: ingestPort, adminPort: adminPort, group: group, task: task)
    }

    public struct RunningServer: Sendable {
        public let ingestPort: Int
        public let adminPort: Int?
        let group: ServiceGroup
        let task: Task<Void, any Error>

        public func stop() async {
            await group.triggerGracefulShutdown()
            _ = try? await task.value
        }
    }

    private func serviceGroupConfiguration(signals: [UnixSignal]) throws -> ServiceGroupConfiguration {
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = []
        // First, so it stops last: the events of the stop itself are still posted.
        if let webhooks { services.append(.init(service: WebhookService(dispatcher: webhooks))) }
        if let objectStore {
            services.append(.init(service: RecordingUploader(store: objectStore, catalog: catalog, shipper: liveShipper, clock: registry.clock,
                                                             metrics: metrics, logger: logger)))
        }
        if let liveShipper { services.append(.init(service: liveShipper)) }
        services.append(.init(service: IngestService(ingest: ingest, registry: registry, metrics: metrics, logger: logger, ports: ports)))
        if let admin { services.append(.init(service: try admin.makeApplication())) }
        // Graceful shutdown runs in reverse order: housekeeping first suspends every session
        // while the listeners still run, then the admin API and the ingest listener close.
        services.append(.init(service: Housekeeping(registry: registry, catalog: catalog, storage: storage,
                                                    retention: RetentionPolicy(maxAge: configuration.retention.maxAgeDays.map { $0 * 86400 },
                                                                               maxTotalBytes: configuration.retention.maxTotalBytes),
                                                    logger: logger)))
        var config = ServiceGroupConfiguration(services: services, gracefulShutdownSignals: signals, cancellationSignals: [], logger: logger)
        config.maximumGracefulShutdownDuration = .milliseconds(Int64(configuration.shutdownGraceSeconds * 1000))
        return config
    }
}

/// Remembers the ingest port once bound (port 0 picks a free one).
final class PortRecord: Sendable {
    private let stream: AsyncStream<Int>
    private let continuation: AsyncStream<Int>.Continuation

    init() { (stream, continuation) = AsyncStream<Int>.makeStream() }

    func ingestBound(_ port: Int) { continuation.yield(port) }

    func waitForIngest() async throws -> Int {
        for await port in stream { return port }
        throw CancellationError()
    }
}

struct IngestService: Service {
    let ingest: IngestServer
    let registry: SessionRegistry
    let metrics: any IngestMetrics
    let logger: Logger
    let ports: PortRecord

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                try await ingest.run(registry: registry, metrics: metrics, logger: logger, group: MultiThreadedEventLoopGroup.singleton) { port in
                    ports.ingestBound(port)
                    registry.ingestAddress.withLockedValue { $0 = "\(ingest.host):\(port)" }
                    // The fleet's row gets the address now, not at the next beat (5 s later):
                    // the first beat may have gone out before the port was bound.
                    Task { await registry.recordHeartbeat() }
                }
            }
        } catch is CancellationError {
            // Closing the listener is how a graceful shutdown ends this service: not a failure
            // (the process must exit 0 so systemd does not report the unit as failed).
        }
    }
}

/// Periodic work: expire sessions whose agents did not come back, apply retention; and on
/// shutdown, finalize every session.
struct Housekeeping: Service {
    let registry: SessionRegistry
    let catalog: any RecordingCatalog
    let storage: StorageLayout
    let retention: RetentionPolicy
    let logger: Logger

    func run() async throws {
        await registry.loadUnfinishedSessions()
        var ticks = 0
        await withGracefulShutdownHandler {
            while !Task.isCancelled && !Task.isShuttingDownGracefully {
                await registry.sweep()
                if retention.isEnabled, ticks % 60 == 0 { await applyRetention() }
                // Memory freed by connections that came and went (a burst of idle or hostile
                // peers) goes back to the system within seconds, not at the next large free.
                if ticks % 5 == 0 { _ = cmalloc_trim() }
                if ticks % 5 == 0 { await registry.recordHeartbeat() }
                if ticks % 5 == 2 { await registry.adoptOrphanedSessions() }
                if ticks % Int(EventBroadcaster.keepAliveInterval.components.seconds) == 0 { registry.events.sendKeepAlive() }
                ticks += 1
                // Once a second: resume windows are a minute, and every tick wakes threads.
                // A cancelled sleep ends the loop at its condition; there is nothing to report.
                try? await registry.clock.sleep(for: .seconds(1))
            }
        } onGracefulShutdown: {
            logger.notice("shutting down: suspending every live session for its agent to resume after the restart")
        }
        await registry.shutdown()
    }

    private func applyRetention() async {
        let live = await registry.liveSessionIDs()
        let (retention, catalog, storage) = (self.retention, self.catalog, self.storage)
        do {
            // File deletions and catalog writes block: on a storage thread, not the task pool.
            let deleted = try await StorageExecutor.pool.runIfActive {
                try retention.apply(catalog: catalog, storage: storage, now: Date(), isLive: { live.contains($0) })
            }
            for r in deleted { logger.notice("retention deleted a recording", metadata: ["recording": "\(r.id)", "path": "\(r.path)", "bytes": "\(r.sizeBytes)"]) }
        } catch {
            logger.error("retention failed", metadata: ["error": "\(error)"])
        }
    }
}

extension ServerConfiguration {
    /// The admin token from `admin.token` or the first line of `admin.tokenFile`.
    func resolvedAdminToken() throws -> String {
        if let token = admin.token { return token }
        guard let file = admin.tokenFile else { return "" }
        let text = try String(contentsOfFile: file, encoding: .utf8)
        return text.split(whereSeparator: \.isNewline).first.map(String.init)?.trimmingCharacters(in: .whitespaces) ?? ""
    }
}

import Logging
import NIOCore
import NIOPosix
import NIOSSL
import RecordingTLS
import Shared
import WireProtocolNIO

/// The agent-facing listener: TCP + TLS 1.3 (mutual by default), then the framed protocol.
/// One child task per connection; TLS is a decorator in the pipeline, so the protocol code
/// never knows whether it is there.
struct IngestServer: Sendable {
    var host: String
    var port: Int
    var tls: TLSConfiguration?
    var authenticator: AgentAuthenticator
    var limits: ProtocolLimits
    var idleTimeout: Duration
    var serverID: Identifier
    /// See `ServerConfiguration.readCoalescingMillis` and `ReadBatchingHandler`.
    var readCoalescing: Duration
    /// What a peer may make the server hold or wait for (protocol.md §9).
    var budgets: IngestBudgets

    init(host: String, port: Int, tls: TLSConfiguration?, authenticator: AgentAuthenticator,
                limits: ProtocolLimits = .default, idleTimeout: Duration = .seconds(30), serverID: Identifier = "record-server",
                readCoalescing: Duration = .milliseconds(200), budgets: IngestBudgets = IngestBudgets()) {
        self.host = host
        self.port = port
        self.tls = tls
        self.authenticator = authenticator
        self.limits = limits
        self.idleTimeout = idleTimeout
        self.serverID = serverID
        self.readCoalescing = readCoalescing
        var budgets = budgets
        budgets.idleTimeout = idleTimeout
        self.budgets = budgets
    }

    /// Binds, reports the bound port, and serves until the task is cancelled.
    func run(registry: SessionRegistry, metrics: any IngestMetrics, logger: Logger, group: any EventLoopGroup,
                    onBound: @Sendable (Int) -> Void) async throws {
        let sslContext = try tls.map { try NIOSSLContext(configuration: $0) }
        let limits = self.limits
        let guards = MessageBatchDecoderHandler.Guards(
            budgets: budgets, partialFrames: SharedByteBudget(name: "partial_frames", limit: budgets.partialFrameBytes),
            preAuthentication: SharedByteBudget(name: "pre_authentication", limit: budgets.preAuthenticationBytes), metrics: metrics,
            requiredALPN: tls == nil ? nil : MCRPTransport.alpnProtocol)
        let readDelay = TimeAmount(readCoalescing)
        let server = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            // Nothing about one accepted connection may end the accept loop. NIO's
            // AcceptBackoffHandler already absorbs accept errors (EMFILE, ENFILE, ENOBUFS).
            // But a failing *child channel option* is fired into the server channel's stream
            // and finishes it, which stops all ingest: that is how a wrong option (SO_DEBUG,
            // root only) once took the server down. So no child options are set here. The
            // per-connection setup below runs as the stream's read transformation, whose
            // failure NIO drops; it closes that one connection and logs it.
            .bind(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    do {
                        try Self.configure(channel, sslContext: sslContext, readDelay: readDelay, limits: limits, guards: guards)
                        return try NIOAsyncChannel<InboundBatch, Message>(
                            wrappingChannelSynchronously: channel,
                            configuration: .init(backPressureStrategy: .init(lowWatermark: 2, highWatermark: 8)))
                    } catch {
                        logger.warning("cannot set up an accepted connection; closed it", metadata: [
                            "peer": "\(channel.remoteAddress.map { "\($0)" } ?? "?")", "error": "\(error)"])
                        metrics.connectionRefused(reason: "setup")
                        channel.close(promise: nil)
                        throw error
                    }
                }
            }
        onBound(server.channel.localAddress?.port ?? port)
        logger.info("ingest listening", metadata: ["address": "\(host):\(server.channel.localAddress?.port ?? port)",
                                                   "tls": "\(tls == nil ? "OFF (insecure development mode)" : "TLS 1.3")"])
        try await withThrowingDiscardingTaskGroup { group in
            try await server.executeThenClose { connections in
                for try await connection in connections {
                    let peerCertificate = Self.peerCertificate(of: connection.channel, tls: sslContext != nil)
                    group.addTask(executorPreference: EventLoopTaskExecutor(connection.channel.eventLoop)) {
                        await AgentConnection(channel: connection, peerCertificate: peerCertificate,
                                              registry: registry, authenticator: authenticator, metrics: metrics,
                                              limits: limits, serverID: serverID, idleTimeout: idleTimeout, logger: logger).run()
                    }
                }
            }
        }
    }

    /// How a connection's verified client certificate is found: asked of the TLS handler
    /// `configure` put in its pipeline, so only the code that adds TLS knows it is there.
    static func peerCertificate(of channel: any Channel, tls: Bool) -> @Sendable () async -> NIOSSLCertificate? {
        guard tls else { return { nil } }
        // Failing only when the TLS handler has left the pipeline (the connection closed):
        // then there is no certificate, and authentication refuses the Hello.
        return { try? await channel.nioSSL_peerCertificate().get() }
    }

    /// One accepted connection's pipeline: TLS, read batching, the framed codec with the
    /// peer's budgets and deadlines.
    static func configure(_ channel: any Channel, sslContext: NIOSSLContext?, readDelay: TimeAmount,
                          limits: ProtocolLimits, guards: MessageBatchDecoderHandler.Guards) throws {
        let sync = channel.pipeline.syncOperations
        // Small acks and heartbeat replies go out at once. IPPROTO_TCP level, not SOL_SOCKET:
        // there the same number is SO_DEBUG.
        try channel.syncOptions?.setOption(.tcpOption(.tcp_nodelay), value: 1)
        if let sslContext { try sync.addHandler(NIOSSLServerHandler(context: sslContext)) }
        try sync.addHandler(ReadBatchingHandler(delay: readDelay))
        try sync.addHandler(MessageBatchDecoderHandler(limits: limits, guards: guards))
        try sync.addHandler(MessageEncoderHandler())
        try sync.addHandler(HeartbeatStampingHandler())
    }
}

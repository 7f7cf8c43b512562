import Logging
import NIOCore
import NIOPosix
import NIOSSL
import Shared

/// The agent-facing listener: TCP + TLS 1.3 (mutual by default), then the framed protocol.
/// One child task per connection; TLS is a decorator in the pipeline, so the protocol code
/// never knows whether it is there.
public struct IngestServer: Sendable {
    public var host: String
    public var port: Int
    public var tls: TLSConfiguration?
    public var authenticator: AgentAuthenticator
    public var limits: ProtocolLimits
    public var idleTimeout: Duration
    public var serverID: Identifier
    /// See `ServerConfiguration.readCoalescingMillis` and `ReadBatchingHandler`.
    public var readCoalescing: Duration

    public init(host: String, port: Int, tls: TLSConfiguration?, authenticator: AgentAuthenticator,
                limits: ProtocolLimits = .default, idleTimeout: Duration = .seconds(30), serverID: Identifier = "record-server",
                readCoalescing: Duration = .milliseconds(200)) {
        self.host = host
        self.port = port
        self.tls = tls
        self.authenticator = authenticator
        self.limits = limits
        self.idleTimeout = idleTimeout
        self.serverID = serverID
        self.readCoalescing = readCoalescing
    }

    /// Binds, reports the bound port, and serves until the task is cancelled.
    public func run(registry: SessionRegistry, metrics: any IngestMetrics, logger: Logger, group: any EventLoopGroup,
                    onBound: @Sendable (Int) -> Void) async throws {
        let sslContext = try tls.map { try NIOSSLContext(configuration: $0) }
        let limits = self.limits
        let idleTimeout = self.idleTimeout
        let readDelay = TimeAmount.nanoseconds(Int64(readCoalescing.components.seconds) * 1_000_000_000
            + readCoalescing.components.attoseconds / 1_000_000_000)
        let server = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            // tcpOption (IPPROTO_TCP), not socketOption: at SOL_SOCKET the same number is
            // SO_DEBUG, which only root may set — as the unit's user every accept failed.
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .bind(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    if let sslContext { try sync.addHandler(NIOSSLServerHandler(context: sslContext)) }
                    try sync.addHandler(ReadBatchingHandler(delay: readDelay))
                    try sync.addHandler(IdleStateHandler(readTimeout: TimeAmount.nanoseconds(Int64(idleTimeout.components.seconds) * 1_000_000_000)))
                    try sync.addHandler(IdleTimeoutHandler())
                    try sync.addHandler(MessageBatchDecoderHandler(limits: limits))
                    try sync.addHandler(MessageEncoderHandler())
                    return try NIOAsyncChannel<[Message], Message>(
                        wrappingChannelSynchronously: channel,
                        configuration: .init(backPressureStrategy: .init(lowWatermark: 2, highWatermark: 8)))
                }
            }
        onBound(server.channel.localAddress?.port ?? port)
        logger.info("ingest listening", metadata: ["address": "\(host):\(server.channel.localAddress?.port ?? port)",
                                                   "tls": "\(tls == nil ? "OFF (insecure development mode)" : "TLS 1.3")"])
        try await withThrowingDiscardingTaskGroup { group in
            try await server.executeThenClose { connections in
                for try await connection in connections {
                    group.addTask(executorPreference: EventLoopTaskExecutor(connection.channel.eventLoop)) {
                        await AgentConnection(channel: connection, registry: registry, authenticator: authenticator, metrics: metrics,
                                              limits: limits, serverID: serverID, idleTimeout: idleTimeout, logger: logger).run()
                    }
                }
            }
        }
    }
}

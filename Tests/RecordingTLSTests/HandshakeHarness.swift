import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
import RecordingTLS

/// What each side of a loopback TLS connection observed.
struct HandshakeOutcome: Sendable {
    /// Server side: the peer certificate and ALPN after a completed handshake, or the error.
    var server: Result<ServerView, any Error>
    /// Client side: the ALPN protocol once the server confirmed the connection (it sends a
    /// greeting only after *its* handshake succeeded), or the error that ended it.
    var client: Result<String?, any Error>

    struct ServerView: Sendable {
        var peerCertificate: NIOSSLCertificate?
        var negotiatedProtocol: String?
    }

    var serverAccepted: Bool { (try? server.get()) != nil }
    var clientAccepted: Bool { (try? client.get()) != nil }
}

struct HandshakeTimeout: Error {}
struct ConnectionClosedBeforeGreeting: Error {}

/// Runs one real TLS connection over TCP on 127.0.0.1 (port 0) between NIOSSL handlers.
///
/// Why the greeting: in TLS 1.3 the client finishes its handshake *before* the server has
/// checked the client certificate, so "the client saw handshakeCompleted" does not mean
/// "accepted". The server writes one byte after its own handshake completes; the client
/// counts as accepted only when that byte arrives.
func runHandshake(
    server serverConfiguration: TLSConfiguration,
    client clientConfiguration: TLSConfiguration,
    serverHostname: String? = nil
) async throws -> HandshakeOutcome {
    let group = MultiThreadedEventLoopGroup.singleton
    let serverContext = try NIOSSLContext(configuration: serverConfiguration)
    let clientContext = try NIOSSLContext(configuration: clientConfiguration)
    let serverPromise = group.any().makePromise(of: HandshakeOutcome.ServerView.self)
    let clientPromise = group.any().makePromise(of: Optional<String>.self)

    let listener = try await ServerBootstrap(group: group)
        .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
        .childChannelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandlers([
                    NIOSSLServerHandler(context: serverContext),
                    ServerProbe(promise: serverPromise),
                ])
            }
        }
        .bind(host: "127.0.0.1", port: 0)
        .get()
    let port = listener.localAddress!.port!

    let connection: Channel
    do {
        connection = try await ClientBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers([
                        NIOSSLClientHandler(
                            context: clientContext,
                            serverHostname: TLSConfigurations.handlerHostname(for: serverHostname)
                        ),
                        ClientProbe(promise: clientPromise),
                    ])
                }
            }
            .connect(host: "127.0.0.1", port: port)
            .get()
    } catch {
        try? await listener.close()
        throw error
    }

    // Nothing here should take more than a fraction of a second; the timeout only keeps a
    // broken build from hanging the test run.
    let timeout = group.any().scheduleTask(in: .seconds(10)) {
        serverPromise.fail(HandshakeTimeout())
        clientPromise.fail(HandshakeTimeout())
    }
    let serverResult = await Result { try await serverPromise.futureResult.get() }
    let clientResult = await Result { try await clientPromise.futureResult.get() }
    timeout.cancel()

    try? await connection.close()
    try? await listener.close()
    return HandshakeOutcome(server: serverResult, client: clientResult)
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}

/// Server end: reports the handshake result and greets an accepted client.
private final class ServerProbe: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    let promise: EventLoopPromise<HandshakeOutcome.ServerView>

    init(promise: EventLoopPromise<HandshakeOutcome.ServerView>) { self.promise = promise }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted(let negotiated) = event as? TLSUserEvent {
            let peer = try? context.pipeline.syncOperations.nioSSL_peerCertificate()
            promise.succeed(.init(peerCertificate: peer, negotiatedProtocol: negotiated))
            context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(string: "!")), promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        promise.fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise.fail(ConnectionClosedBeforeGreeting())
        context.fireChannelInactive()
    }
}

/// Client end: accepted once the server's greeting arrives.
private final class ClientProbe: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    let promise: EventLoopPromise<String?>
    var negotiated: String?

    init(promise: EventLoopPromise<String?>) { self.promise = promise }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted(let negotiated) = event as? TLSUserEvent {
            self.negotiated = negotiated
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        promise.succeed(negotiated)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        promise.fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise.fail(ConnectionClosedBeforeGreeting())
        context.fireChannelInactive()
    }
}

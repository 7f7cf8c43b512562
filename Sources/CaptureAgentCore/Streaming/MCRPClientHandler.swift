import NIOCore
import WireProtocol

/// What the channel handler reports to its owner, on the channel's event loop.
protocol MCRPConnectionDelegate: AnyObject {
    func connectionActive(_ connection: Int)
    func connectionReceived(_ message: Message, connection: Int)
    func connectionFailed(_ error: ProtocolError, connection: Int)
    func connectionWritable(connection: Int)
    func connectionInactive(_ connection: Int)
    func connectionError(_ error: any Error, connection: Int)
}

/// Frames outbound ``Message``s and parses inbound bytes with the sans-I/O codec
/// (``FrameEncoder`` / ``MessageParser``). No protocol decisions are made here: every
/// message goes to the delegate, which feeds ``AgentStateMachine``.
///
/// The one thing it does on its own is framing configuration: after `HelloReply`, frames
/// in both directions carry the negotiated version and outbound frames stay within the
/// server's announced limits (protocol.md §5, §6.2).
final class MCRPClientHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = Message
    typealias OutboundOut = ByteBuffer

    private let connection: Int
    private weak var delegate: (any MCRPConnectionDelegate)?
    private var parser = MessageParser()
    private var encoder = FrameEncoder()
    private var failed = false

    init(connection: Int, delegate: any MCRPConnectionDelegate) {
        self.connection = connection
        self.delegate = delegate
    }

    func channelActive(context: ChannelHandlerContext) {
        delegate?.connectionActive(connection)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        delegate?.connectionInactive(connection)
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed else { return }
        parser.append(unwrapInboundIn(data))
        do {
            while let message = try parser.nextMessage() {
                if case .helloReply(let reply) = message {
                    parser.supportedVersions = reply.version...reply.version
                    encoder.version = reply.version
                    encoder.limits = ProtocolLimits.default.applying(reply.limits)
                }
                delegate?.connectionReceived(message, connection: connection)
            }
        } catch {
            failed = true
            delegate?.connectionFailed(error, connection: connection)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { delegate?.connectionWritable(connection: connection) }
        context.fireChannelWritabilityChanged()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        delegate?.connectionError(error, connection: connection)
        context.close(promise: nil)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let message = unwrapOutboundIn(data)
        var buffer = context.channel.allocator.buffer(capacity: 64)
        do {
            try encoder.encode(message, into: &buffer)
        } catch {
            promise?.fail(error)
            delegate?.connectionError(error, connection: connection)
            return
        }
        context.write(wrapOutboundOut(buffer), promise: promise)
    }
}

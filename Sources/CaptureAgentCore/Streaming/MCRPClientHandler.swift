import NIOCore
import WireProtocol
import WireProtocolNIO

/// What the channel handler reports to its owner, on the channel's event loop.
protocol MCRPConnectionDelegate: AnyObject {
    func connectionActive(_ connection: Int)
    func connectionReceived(_ message: Message, connection: Int)
    func connectionFailed(_ error: ProtocolError, connection: Int)
    func connectionWritable(connection: Int)
    func connectionInactive(_ connection: Int)
    func connectionError(_ error: any Error, connection: Int)
}

/// Hands the connection's events and decoded ``Message``s to the runtime (the delegate, which
/// feeds ``AgentStateMachine``). It sits behind WireProtocolNIO's `MessageCodecHandler`,
/// which does the framing (and follows the negotiated version and limits); no protocol
/// decisions are made here.
final class MCRPClientHandler: ChannelInboundHandler {
    typealias InboundIn = Message

    private let connection: Int
    private weak var delegate: (any MCRPConnectionDelegate)?

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
        delegate?.connectionReceived(unwrapInboundIn(data), connection: connection)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { delegate?.connectionWritable(connection: connection) }
        context.fireChannelWritabilityChanged()
    }

    /// A `ProtocolError` is the codec's: the server's bytes broke the protocol, and the state
    /// machine answers it (protocol.md §8) before closing. A message the codec could not encode
    /// (over the server's limits) is reported; nothing of it was written and the connection
    /// goes on. Anything else (TLS, the socket) closes the connection here.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        switch error {
        case let refused as MessageEncodingFailure:
            delegate?.connectionError(refused.error, connection: connection)
        case let violation as ProtocolError:
            delegate?.connectionFailed(violation, connection: connection)
        default:
            delegate?.connectionError(error, connection: connection)
            context.close(promise: nil)
        }
    }
}

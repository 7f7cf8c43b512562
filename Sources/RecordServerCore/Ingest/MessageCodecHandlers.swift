import NIOCore
import Shared

/// Feeds received bytes to the sans-I/O `MessageParser` and passes on whole messages. A
/// protocol violation is fired as an error; the connection loop answers it and closes.
final class MessageDecoderHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = Message

    private var parser: MessageParser
    private var failed = false

    init(limits: ProtocolLimits) { parser = MessageParser(limits: limits) }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed else { return }
        parser.append(unwrapInboundIn(data))
        do {
            while let message = try parser.nextMessage() {
                context.fireChannelRead(wrapInboundOut(message))
            }
        } catch {
            failed = true
            context.fireErrorCaught(error)
        }
    }
}

/// Encodes outgoing messages into frames.
final class MessageEncoderHandler: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = Message
    typealias OutboundOut = ByteBuffer

    private let encoder = FrameEncoder()

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        var buffer = context.channel.allocator.buffer(capacity: 64)
        do {
            try encoder.encode(unwrapOutboundIn(data), into: &buffer)
            context.write(wrapOutboundOut(buffer), promise: promise)
        } catch {
            promise?.fail(error)
        }
    }
}

/// Closes a connection that has been silent for longer than the idle timeout (protocol.md §7.4).
final class IdleTimeoutHandler: ChannelInboundHandler {
    typealias InboundIn = NIOAny

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let idle = event as? IdleStateHandler.IdleStateEvent, idle == .read {
            context.fireErrorCaught(ProtocolError(.idleTimeout, "no frame received within the idle timeout"))
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }
}

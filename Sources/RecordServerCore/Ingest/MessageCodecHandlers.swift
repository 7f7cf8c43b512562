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

/// The server's decoder: like `MessageDecoderHandler`, but passes on everything one read cycle
/// brought as one batch (at `channelReadComplete`), so the connection task wakes, and calls
/// its session, once per cycle instead of once per sample. A batch holds at most what one
/// cycle read (the channel's read limits bound it); messages before a protocol violation are
/// passed on before the error.
final class MessageBatchDecoderHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = [Message]

    private var parser: MessageParser
    private var batch: [Message] = []
    private var failed = false

    init(limits: ProtocolLimits) { parser = MessageParser(limits: limits) }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed else { return }
        parser.append(unwrapInboundIn(data))
        do {
            while let message = try parser.nextMessage() { batch.append(message) }
        } catch {
            failed = true
            flushBatch(context: context)
            context.fireErrorCaught(error)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flushBatch(context: context)
        context.fireChannelReadComplete()
    }

    private func flushBatch(context: ChannelHandlerContext) {
        guard !batch.isEmpty else { return }
        let messages = batch
        batch = []
        context.fireChannelRead(wrapInboundOut(messages))
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

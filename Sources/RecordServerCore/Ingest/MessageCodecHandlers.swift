import NIOCore
import Shared

/// The sans-I/O `MessageParser` plus the rule both decoder handlers follow: after the first
/// protocol violation the byte stream is broken, so later bytes are ignored.
struct MessageStreamDecoder {
    private var parser: MessageParser
    private var failed = false

    init(limits: ProtocolLimits) { parser = MessageParser(limits: limits) }

    /// Appends `bytes` and hands on every whole message; throws the violation once.
    mutating func decode(_ bytes: ByteBuffer, _ emit: (Message) -> Void) throws {
        guard !failed else { return }
        parser.append(bytes)
        do {
            while let message = try parser.nextMessage() { emit(message) }
        } catch {
            failed = true
            throw error
        }
    }
}

/// Feeds received bytes to the parser and passes on whole messages. A protocol violation is
/// fired as an error; the connection loop answers it and closes.
final class MessageDecoderHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = Message

    private var decoder: MessageStreamDecoder

    init(limits: ProtocolLimits) { decoder = MessageStreamDecoder(limits: limits) }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        do {
            try decoder.decode(unwrapInboundIn(data)) { context.fireChannelRead(wrapInboundOut($0)) }
        } catch {
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

    private var decoder: MessageStreamDecoder
    private var batch: [Message] = []

    init(limits: ProtocolLimits) { decoder = MessageStreamDecoder(limits: limits) }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        do {
            try decoder.decode(unwrapInboundIn(data)) { batch.append($0) }
        } catch {
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

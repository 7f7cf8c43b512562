import NIOCore
import Shared

/// The sans-I/O `MessageParser` plus the rule both decoder handlers follow: after the first
/// protocol violation the byte stream is broken, so later bytes are ignored.
struct MessageStreamDecoder {
    private var parser: MessageParser
    private let limits: ProtocolLimits
    private var failed = false

    init(limits: ProtocolLimits, preAuthenticationMaxPayload: Int? = nil) {
        self.limits = limits
        parser = MessageParser(limits: limits, preAuthenticationMaxPayload: preAuthenticationMaxPayload)
    }

    /// Lets go of every byte held towards an incomplete frame and decodes nothing more. For a
    /// connection that is over: its handler (and this decoder) lives until the connection's
    /// task lets go of the channel, and bytes no budget counts any longer must not stay
    /// resident that long (150 partial 8 MiB frames took the server 460 MiB past its budget).
    mutating func discardBufferedBytes() {
        failed = true
        parser = MessageParser(limits: limits)
    }

    mutating func liftPreAuthenticationLimit() { parser.liftPreAuthenticationLimit() }

    /// Bytes held towards a frame not yet complete.
    var partialFrameBytes: Int { parser.partialFrameBytes }
    var frameCount: Int { parser.frameCount }
    var partialFrame: (held: Bool, length: Int?) { (parser.holdsPartialFrame, parser.pendingPayloadLength) }

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

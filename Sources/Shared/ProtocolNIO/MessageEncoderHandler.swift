import NIOCore
import WireProtocol

/// Encodes outgoing ``Message``s into frames with the sans-I/O ``FrameEncoder``, for the
/// server's end, whose connection task awaits every write. A message the encoder refuses
/// (over the limits, protocol.md §4) fails its write's promise and nothing else: nothing of it
/// is written and the connection goes on.
public final class MessageEncoderHandler: ChannelOutboundHandler, RemovableChannelHandler {
    public typealias OutboundIn = Message
    public typealias OutboundOut = ByteBuffer

    private let encoder: FrameEncoder

    public init(encoder: FrameEncoder = FrameEncoder()) { self.encoder = encoder }

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        do {
            try encoder.write(unwrapOutboundIn(data), context: context, promise: promise)
        } catch {
            promise?.fail(error)
        }
    }
}

extension FrameEncoder {
    /// Encodes `message` and writes its frame on from `context`; writes nothing if it throws.
    func write(_ message: Message, context: ChannelHandlerContext, promise: EventLoopPromise<Void>?) throws(ProtocolError) {
        var buffer = context.channel.allocator.buffer(capacity: 64)
        try encode(message, into: &buffer)
        context.write(NIOAny(buffer), promise: promise)
    }
}

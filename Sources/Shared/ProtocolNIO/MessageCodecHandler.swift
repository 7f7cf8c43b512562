import NIOCore
import WireProtocol

/// Both directions of a connection that handles one ``Message`` at a time: received bytes
/// become messages, written messages become frames. Used at the agent's end (the
/// capture-agent, the ingest benchmark's simulated agents, test agents); the server decodes
/// a read cycle's messages as one batch instead (RecordServerCore's `MessageBatchDecoderHandler`
/// with this module's ``MessageStreamDecoder`` and ``MessageEncoderHandler``).
///
/// A protocol violation in what arrives is fired as a ``ProtocolError`` through
/// `errorCaught`, once; the bytes after it are ignored. A message the encoder refuses (over
/// the limits) fails its write's promise and, as NIO's `MessageToByteHandler` does, is fired
/// too, as a ``MessageEncodingFailure``, so a handler that writes without promises still
/// hears of it; nothing of it is written and later writes go on. Whoever is next decides what
/// to answer and whether to close.
///
/// The one protocol rule it keeps itself is framing: once a ``HelloReply`` arrives, frames in
/// both directions carry the version it chose and outbound frames stay within the limits the
/// server announced (protocol.md §5, §6.2). Only an agent receives a HelloReply.
public final class MessageCodecHandler: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = Message
    public typealias OutboundIn = Message
    public typealias OutboundOut = ByteBuffer

    private var decoder: MessageStreamDecoder
    private var encoder = FrameEncoder()

    public init(limits: ProtocolLimits = .default) {
        decoder = MessageStreamDecoder(limits: limits, followsHelloReply: true)
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        decoder.append(unwrapInboundIn(data))
        do {
            while let message = try decoder.nextMessage() {
                if case .helloReply(let reply) = message {
                    encoder.version = reply.version
                    encoder.limits = ProtocolLimits.default.applying(reply.limits)
                }
                context.fireChannelRead(wrapInboundOut(message))
            }
        } catch {
            context.fireErrorCaught(error)
        }
    }

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let message = unwrapOutboundIn(data)
        do {
            try encoder.write(message, context: context, promise: promise)
        } catch {
            promise?.fail(error)
            context.fireErrorCaught(MessageEncodingFailure(type: message.type, error: error))
        }
    }
}

/// A message ``MessageCodecHandler`` could not encode (fired through `errorCaught`).
public struct MessageEncodingFailure: Error, Sendable, CustomStringConvertible {
    public var type: MessageType
    public var error: ProtocolError
    public var description: String { "cannot encode \(type): \(error)" }
}

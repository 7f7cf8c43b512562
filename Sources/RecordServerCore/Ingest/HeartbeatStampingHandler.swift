import NIOCore
import Shared

/// Stamps the server's heartbeat times at the last moment the server itself controls: when
/// the message reaches the pipeline on the connection's event loop, right before it is encoded
/// and encrypted. A `Heartbeat`'s t1 and a `HeartbeatReply`'s t3 (protocol.md §6.4) taken in the
/// connection task would include the hop to the event loop, which on a loaded server is
/// milliseconds, and all of it would count as path asymmetry in the clock model
/// (docs/architecture.md, "Clock model"). The read side is stamped in the pipeline too
/// (`InboundBatch.readAt`).
final class HeartbeatStampingHandler: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = Message
    typealias OutboundOut = Message

    private let now: () -> Int64

    init(now: @escaping () -> Int64 = monotonicNanoseconds) {
        self.now = now
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .heartbeat(var heartbeat):
            heartbeat.originTime = now()
            context.write(wrapOutboundOut(.heartbeat(heartbeat)), promise: promise)
        case .heartbeatReply(var reply):
            reply.transmitTime = max(now(), reply.receiveTime)
            context.write(wrapOutboundOut(.heartbeatReply(reply)), promise: promise)
        default:
            context.write(data, promise: promise)
        }
    }
}

import NIOCore

/// Lets a trickling connection's bytes collect in the kernel for a moment before reading them.
///
/// A live agent sends ~110 small writes a second (one per sample). Reading each as it lands
/// costs a thread wake-up, a read call and a trip through the pipeline per sample, which is most
/// of the server's CPU at low session counts. When a read cycle brought little
/// (`< busyCycleBytes`), this handler postpones the next read request by `delay`, so the next
/// cycle takes everything that arrived meanwhile in one go. A busy connection (a cycle of
/// `busyCycleBytes` or more: an agent catching up, or many sessions) is read without delay.
///
/// Cost: acknowledgements and control replies may be up to `delay` later (acknowledgements
/// already wait for the fragment, ~1 s). The socket's receive buffer holds what waits.
/// Batching starts when the connection task asks for it (`ReadBatchingHandler.Start`, sent once
/// a session is streaming), so the TLS and protocol handshakes are not slowed.
final class ReadBatchingHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = NIOAny
    typealias OutboundOut = NIOAny

    /// Outbound user event: from now on, batch reads.
    struct Start: Sendable {}

    private let delay: TimeAmount
    private let busyCycleBytes: Int
    private var enabled = false
    private var cycleBytes = 0
    private var lastCycleBytes = Int.max
    private var pendingRead: Scheduled<Void>?

    init(delay: TimeAmount, busyCycleBytes: Int = 128 << 10) {
        self.delay = delay
        self.busyCycleBytes = busyCycleBytes
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        cycleBytes += unwrapInboundIn(data).readableBytes
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        lastCycleBytes = cycleBytes
        cycleBytes = 0
        context.fireChannelReadComplete()
    }

    func read(context: ChannelHandlerContext) {
        guard enabled, delay > .zero, lastCycleBytes < busyCycleBytes else {
            context.read()
            return
        }
        guard pendingRead == nil else { return }
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        pendingRead = context.eventLoop.scheduleTask(in: delay) {
            let (handler, context) = loopBound.value
            handler.pendingRead = nil
            context.read()
        }
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        if event is Start {
            enabled = true
            promise?.succeed(())
        } else {
            context.triggerUserOutboundEvent(event, promise: promise)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        cancelPendingRead()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        cancelPendingRead()
    }

    private func cancelPendingRead() {
        pendingRead?.cancel()
        pendingRead = nil
    }
}

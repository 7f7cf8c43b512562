#if canImport(Glibc)
import Glibc
#endif
import NIOCore

/// Lets a trickling connection's bytes collect in the kernel for a moment before reading them,
/// and never holds back a connection that has more to give than the socket holds.
///
/// A live agent sends ~110 small writes a second (one per sample). Reading each as it lands
/// costs a thread wake-up, a read call and a trip through the pipeline per sample, which is most
/// of the server's CPU at low session counts. So when NIO asks for the next read, this handler
/// may postpone it by up to `delay`, and the next cycle takes everything that arrived meanwhile
/// in one go.
///
/// When it waits is `ReadPacing`'s rule, fed each cycle's size and, at every read request, the
/// kernel's view of the socket (`SO_MEMINFO`: bytes queued and the receive buffer's size, one
/// `getsockopt` on the event loop): read at once when bytes are already queued, or when the last
/// cycle brought half a socket-full (the window limited it); otherwise wait only as long as the
/// connection's arrival rate needs to fill a quarter of the socket, at most `delay`. The former
/// rule ("wait unless the last cycle brought ≥ 128 KiB") read a backlogged connection whose
/// window held less than 128 KiB once per `delay` for good: ~108 KiB per 200 ms, 550 KB/s,
/// below one live 2×720p session (issue 14, finding 7).
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

    /// Outbound user event: read at once until `until` (nil: from now on batch again). The
    /// connection task sends it with each clock probe, so the agent's reply is read when it
    /// lands and its arrival time is not held back by a wait (docs/architecture.md, "Clock model").
    struct PromptReads: Sendable {
        var until: NIODeadline?
    }

    /// Reads the socket's memory figures; nil when the channel cannot tell (not a socket, not Linux).
    typealias SocketProbe = (any Channel) -> ReadPacing.Socket?

    private var pacing: ReadPacing
    private let probe: SocketProbe
    private var pendingRead: Scheduled<Void>?
    private var promptUntil: NIODeadline?
    /// Reads postponed so far (for tests and diagnostics).
    private(set) var delayedReads = 0

    init(delay: TimeAmount, probe: @escaping SocketProbe = ReadBatchingHandler.socketMemory) {
        pacing = ReadPacing(maxDelay: delay.nanoseconds)
        self.probe = probe
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        pacing.received(unwrapInboundIn(data).readableBytes)
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        pacing.cycleCompleted(at: Int64(context.eventLoop.now.uptimeNanoseconds))
        context.fireChannelReadComplete()
    }

    func read(context: ChannelHandlerContext) {
        guard pendingRead == nil else { return }
        if let until = promptUntil, context.eventLoop.now < until {
            context.read()
            return
        }
        switch pacing.nextRead(socket: probe(context.channel)) {
        case .readNow:
            context.read()
        case .wait(let nanoseconds):
            delayedReads += 1
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            pendingRead = context.eventLoop.scheduleTask(in: .nanoseconds(nanoseconds)) {
                let (handler, context) = loopBound.value
                handler.pendingRead = nil
                context.read()
            }
        }
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        if event is Start {
            pacing.start()
            promise?.succeed(())
        } else if let prompt = event as? PromptReads {
            promptUntil = prompt.until
            promise?.succeed(())
            // A read waiting out a delay would hold the reply back: read now instead.
            if prompt.until != nil, pendingRead != nil {
                cancelPendingRead()
                context.read()
            }
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

    /// `getsockopt(SOL_SOCKET, SO_MEMINFO)` through NIO's socket option provider. On the event
    /// loop the provider answers synchronously (its future is already complete).
    static func socketMemory(_ channel: any Channel) -> ReadPacing.Socket? {
        #if os(Linux)
        guard let provider = channel as? any SocketOptionProvider, channel.eventLoop.inEventLoop else { return nil }
        // The first two of the kernel's SK_MEMINFO_VARS u32s: RMEM_ALLOC, RCVBUF. The kernel
        // copies at most the length asked for.
        let memInfo: SocketOptionName = 55  // SO_MEMINFO (asm-generic/socket.h)
        let answer: EventLoopFuture<(UInt32, UInt32)> = provider.unsafeGetSocketOption(level: SocketOptionLevel(SOL_SOCKET), name: memInfo)
        var figures: (UInt32, UInt32)?
        answer.assumeIsolated().whenSuccess { figures = $0 }
        guard let (queued, capacity) = figures, capacity > 0 else { return nil }
        return ReadPacing.Socket(queued: Int(queued), capacity: Int(capacity))
        #else
        return nil
        #endif
    }
}

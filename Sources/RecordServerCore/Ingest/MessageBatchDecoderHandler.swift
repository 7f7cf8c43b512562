import NIOCore
import NIOTLS
import Shared
import WireProtocolNIO

/// The server's decoder: the shared `MessageStreamDecoder` (WireProtocolNIO), passing on
/// everything one read cycle brought as one batch (at `channelReadComplete`), so the
/// connection task wakes, and calls its session, once per cycle instead of once per sample
/// (the agent's end decodes one message at a time: `MessageCodecHandler`). Messages before a
/// protocol violation are passed on before the error.
///
/// It lives with the server, not in WireProtocolNIO, because the rest of it is the server's
/// policy towards its peers, which reads the decoder's state between reads. It holds each peer
/// to its bounds (protocol.md §7.4, §9), when given `guards`:
/// - Before the connection task confirms the peer (``Authenticated``) every frame may be at
///   most ``IngestBudgets/maxHelloPayload`` bytes, nothing is read past the first (the Hello),
///   and what the peer holds in part counts against the small pre-authentication budget.
/// - After, partly received frames count against the server-wide budget: a connection
///   whose next bytes do not fit is closed with `budgetExhausted`.
/// - ``InboundDeadlines``: the Hello, each frame and the idle timeout; time while the server
///   itself does not read (backpressure, waiting for authentication) does not count.
/// What one read cycle brought, and when: `readAt` is the server's monotonic time of the read
/// that decoded the first of `messages`, so the arrival time of a heartbeat reply among them
/// (t4 of a clock exchange, protocol.md §6.4) is not moved by how long the connection task took
/// to get to it.
struct InboundBatch: Sendable {
    var messages: [Message]
    var readAt: Int64
}

final class MessageBatchDecoderHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = InboundBatch
    typealias OutboundIn = NIOAny
    typealias OutboundOut = NIOAny

    /// Outbound user event from the connection task: the peer's Hello was accepted.
    struct Authenticated: Sendable {}

    /// The budgets and the shared counters they are charged to.
    struct Guards: Sendable {
        var budgets: IngestBudgets
        var partialFrames: SharedByteBudget
        var preAuthentication: SharedByteBudget
        var metrics: any IngestMetrics
        /// The ALPN protocol the TLS handshake must have agreed on (protocol.md §2); nil without TLS.
        var requiredALPN: String?
    }

    private var decoder: MessageStreamDecoder
    private var batch: [Message] = []
    /// When the read that decoded the batch's first message happened.
    private var batchReadAt: Int64?
    private let guards: Guards?
    private var deadlines: InboundDeadlines?
    private var authenticated = false
    /// Bytes charged to the budget that applies now.
    private var charged = 0
    /// A read the pipeline asked for while the peer was not yet confirmed.
    private var readHeld = false
    /// Since when the server has not been asking for data (deadlines stand still meanwhile).
    private var notReadingSince: NIODeadline?
    private var timer: Scheduled<Void>?
    private var timerAt: NIODeadline?
    private var failed = false

    init(limits: ProtocolLimits, guards: Guards? = nil) {
        self.guards = guards
        decoder = MessageStreamDecoder(limits: limits, preAuthenticationMaxPayload: guards == nil ? nil : IngestBudgets.maxHelloPayload)
    }

    // MARK: Inbound

    func handlerAdded(context: ChannelHandlerContext) {
        guard let guards else { return }
        deadlines = InboundDeadlines(budgets: guards.budgets, connectedAt: .now())
        armTimer(context: context)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed else { return }
        let readAt = monotonicNanoseconds()
        do {
            decoder.append(unwrapInboundIn(data))
            while let message = try decoder.nextMessage() {
                if batch.isEmpty { batchReadAt = readAt }
                batch.append(message)
            }
            try chargeHeldBytes()
        } catch {
            if !authenticated, error.code == .frameTooLarge { guards?.metrics.budgetRefused("pre_authentication") }
            fail(error, context: context)
            return
        }
        deadlines?.observe(now: .now(), framesCompleted: decoder.frameCount, partialFrame: decoder.partialFrame)
        armTimer(context: context)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted(let negotiated) = event as? TLSUserEvent, let required = guards?.requiredALPN, negotiated != required {
            guards?.metrics.connectionRefused(reason: "alpn")
            fail(ProtocolError(.handshakeRequired, "the TLS handshake agreed on ALPN \(negotiated.map { "\"\($0)\"" } ?? "nothing"); "
                               + "an agent must offer \"\(required)\" (is this client speaking another protocol to the agent port?)"), context: context)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flushBatch(context: context)
        if notReadingSince == nil { notReadingSince = .now() }
        context.fireChannelReadComplete()
    }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stop()
    }

    // MARK: Outbound

    func read(context: ChannelHandlerContext) {
        if let since = notReadingSince {
            deadlines?.shift(by: NIODeadline.now() - since)
            notReadingSince = nil
        }
        // Until the connection task has accepted the Hello, nothing past it is read: an
        // unauthenticated peer holds at most its first frame and what one read brought.
        if guards != nil, !authenticated, decoder.frameCount > 0 {
            readHeld = true
            notReadingSince = .now()
            return
        }
        context.read()
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        guard event is Authenticated else {
            context.triggerUserOutboundEvent(event, promise: promise)
            return
        }
        promise?.succeed(())
        guard !authenticated else { return }
        authenticated = true
        decoder.liftPreAuthenticationLimit()
        // What the peer holds now counts against the server-wide budget instead.
        if let guards {
            guards.preAuthentication.release(charged)
            if guards.partialFrames.charge(charged) { } else {
                charged = 0
                fail(ProtocolError(.budgetExhausted, "the server is receiving too many large frames at once; retry later"), context: context)
                return
            }
        }
        if readHeld {
            readHeld = false
            read(context: context)
        }
    }

    // MARK: Internals

    private func chargeHeldBytes() throws(ProtocolError) {
        guard let guards else { return }
        let held = decoder.partialFrameBytes
        let budget = authenticated ? guards.partialFrames : guards.preAuthentication
        if held > charged {
            guard budget.charge(held - charged) else {
                guards.metrics.budgetRefused(authenticated ? "partial_frames" : "pre_authentication")
                throw ProtocolError(.budgetExhausted, authenticated
                    ? "the server holds \(budget.inUse) bytes of partly received frames, its limit (partialFrameBudgetBytes); retry later"
                    : "too many unauthenticated connections are sending at once; retry later")
            }
        } else {
            budget.release(charged - held)
        }
        charged = held
    }

    private func armTimer(context: ChannelHandlerContext) {
        guard let deadlines, !failed else { return }
        let next = deadlines.nextDeadline().at
        if let timerAt, timerAt <= next { return }
        timer?.cancel()
        timerAt = next
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(deadline: next) {
            let (handler, context) = loopBound.value
            handler.timer = nil
            handler.timerAt = nil
            handler.deadlineReached(context: context)
        }
    }

    private func deadlineReached(context: ChannelHandlerContext) {
        guard let deadlines, !failed else { return }
        // While the server is not reading, the peer cannot be late.
        if notReadingSince == nil, let expiry = deadlines.expired(at: .now()) {
            let error: ProtocolError
            switch expiry {
            case .hello:
                guards?.metrics.budgetRefused("hello_deadline")
                error = ProtocolError(.idleTimeout, "no Hello within \(deadlines.budgets.helloDeadline) of connecting")
            case .idle:
                error = ProtocolError(.idleTimeout, "no complete frame within the idle timeout (\(deadlines.budgets.idleTimeout))")
            case .frame:
                guards?.metrics.budgetRefused("frame_deadline")
                error = ProtocolError(.frameTooSlow, "a frame did not complete in time (at least \(deadlines.budgets.minFrameBytesPerSecond) bytes/s after a \(deadlines.budgets.frameGrace) grace)")
            }
            fail(error, context: context)
            return
        }
        if notReadingSince != nil {
            // Look again later; the deadline moves by the time the server spent not reading.
            timerAt = nil
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            timer = context.eventLoop.scheduleTask(in: .seconds(1)) {
                let (handler, context) = loopBound.value
                handler.timer = nil
                handler.deadlineReached(context: context)
            }
            return
        }
        armTimer(context: context)
    }

    private func fail(_ error: any Error, context: ChannelHandlerContext) {
        guard !failed else { return }
        failed = true
        flushBatch(context: context)
        releaseCharge()
        timer?.cancel()
        timer = nil
        context.fireErrorCaught(error)
    }

    private func stop() {
        releaseCharge()
        timer?.cancel()
        timer = nil
        failed = true
    }

    /// The connection is over: its partly received frame no longer counts against a budget,
    /// so it must not stay in memory either.
    private func releaseCharge() {
        decoder.discardBufferedBytes()
        guard let guards, charged > 0 else { return }
        (authenticated ? guards.partialFrames : guards.preAuthentication).release(charged)
        charged = 0
    }

    private func flushBatch(context: ChannelHandlerContext) {
        guard !batch.isEmpty else { return }
        let messages = InboundBatch(messages: batch, readAt: batchReadAt ?? monotonicNanoseconds())
        batch = []
        batchReadAt = nil
        context.fireChannelRead(wrapInboundOut(messages))
    }
}

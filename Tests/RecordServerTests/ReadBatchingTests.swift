#if canImport(Glibc)
import Glibc
#endif
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import NIOPosix
@testable import RecordServerCore
import Testing
import Shared

/// What the handler's socket probe answers in the EmbeddedChannel tests.
private final class FakeSocket {
    var memory: ReadPacing.Socket?
    init(_ memory: ReadPacing.Socket?) { self.memory = memory }
}

@Suite struct ReadBatchingTests {
    /// - Parameter streaming: send `ReadBatchingHandler.Start` first, as a connection does once
    ///   its session streams.
    private func makeChannel(delay: TimeAmount = .milliseconds(100), socket: FakeSocket = FakeSocket(nil),
                             streaming: Bool = true) throws -> (EmbeddedChannel, ReadCounter) {
        let counter = ReadCounter()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(counter)
        try channel.pipeline.syncOperations.addHandler(ReadBatchingHandler(delay: delay, probe: { _ in socket.memory }))
        if streaming { try channel.triggerUserOutboundEvent(ReadBatchingHandler.Start()).wait() }
        return (channel, counter)
    }

    /// One read cycle of `parts` reads (EmbeddedChannel.writeInbound would complete a cycle per read).
    private func cycle(_ channel: EmbeddedChannel, bytes parts: Int...) throws {
        for bytes in parts { channel.pipeline.fireChannelRead(NIOAny(ByteBuffer(repeating: 7, count: bytes))) }
        channel.pipeline.fireChannelReadComplete()
        for bytes in parts { #expect(try channel.readInbound(as: ByteBuffer.self)?.readableBytes == bytes) }
    }

    @Test func readsAtOnceUntilASessionStreams() throws {
        let (channel, counter) = try makeChannel(streaming: false)
        try cycle(channel, bytes: 10)
        channel.read()
        #expect(counter.reads == 1)
    }

    @Test func aTricklingConnectionIsReadAfterTheDelay() throws {
        let (channel, counter) = try makeChannel(socket: FakeSocket(.init(queued: 0, capacity: 1 << 20)))
        try cycle(channel, bytes: 10)
        channel.read()
        channel.read()  // a second request while one waits adds nothing
        #expect(counter.reads == 0)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(99))
        #expect(counter.reads == 0)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(counter.reads == 1)
    }

    @Test func bytesAlreadyQueuedInTheKernelAreReadAtOnce() throws {
        let socket = FakeSocket(.init(queued: 2304, capacity: 131_072))
        let (channel, counter) = try makeChannel(socket: socket)
        try cycle(channel, bytes: 10)
        channel.read()
        #expect(counter.reads == 1)
        // Nothing queued: back to waiting.
        socket.memory?.queued = 0
        try cycle(channel, bytes: 10)
        channel.read()
        #expect(counter.reads == 1)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(100))
        #expect(counter.reads == 2)
    }

    @Test func aCycleLimitedByTheWindowIsFollowedAtOnce() throws {
        // Finding 7's socket: 128 KiB of receive buffer, ~108 KiB per cycle, less than the
        // former fixed 128 KiB "busy" threshold.
        let (channel, counter) = try makeChannel(socket: FakeSocket(.init(queued: 0, capacity: 131_072)))
        try cycle(channel, bytes: 65_536, 45_056)
        channel.read()
        #expect(counter.reads == 1)
    }

    @Test func withoutTheKernelsFiguresA128KiBCycleIsBusy() throws {
        let (channel, counter) = try makeChannel()
        try cycle(channel, bytes: 65_536, 65_536)
        channel.read()
        #expect(counter.reads == 1)
        try cycle(channel, bytes: 999)
        channel.read()
        #expect(counter.reads == 1)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(100))
        #expect(counter.reads == 2)
    }

    @Test func aZeroDelayNeverWaits() throws {
        let (channel, counter) = try makeChannel(delay: .zero)
        try cycle(channel, bytes: 1)
        channel.read()
        #expect(counter.reads == 1)
    }

    @Test func closingCancelsTheWaitingRead() throws {
        let (channel, counter) = try makeChannel()
        try cycle(channel, bytes: 10)
        channel.read()
        channel.pipeline.fireChannelInactive()
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(counter.reads == 0)
    }

    /// A clock probe is out: reads happen at once, and a read already waiting is done now,
    /// until the reply has come (or the probe's deadline passed); then batching resumes.
    @Test func aClockProbeMakesReadsPromptUntilItEnds() throws {
        let (channel, counter) = try makeChannel(socket: FakeSocket(.init(queued: 0, capacity: 1 << 20)))
        try cycle(channel, bytes: 10)
        channel.read()
        #expect(counter.reads == 0, "a trickling connection waits")
        let until = channel.embeddedEventLoop.now + .seconds(2)
        try channel.triggerUserOutboundEvent(ReadBatchingHandler.PromptReads(until: until)).wait()
        #expect(counter.reads == 1, "the waiting read is done at once")
        try cycle(channel, bytes: 10)
        channel.read()
        #expect(counter.reads == 2, "and the next one too")
        try channel.triggerUserOutboundEvent(ReadBatchingHandler.PromptReads(until: nil)).wait()
        try cycle(channel, bytes: 10)
        channel.read()
        #expect(counter.reads == 2, "the reply came: batching again")
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(100))
        #expect(counter.reads == 3)
        // A probe whose reply never comes stops making reads prompt at its deadline.
        try channel.triggerUserOutboundEvent(ReadBatchingHandler.PromptReads(until: channel.embeddedEventLoop.now + .milliseconds(50))).wait()
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(60))
        try cycle(channel, bytes: 10)
        channel.read()
        #expect(counter.reads == 3)
    }

    @Test func otherOutboundEventsPassThrough() throws {
        let (channel, _) = try makeChannel(streaming: false)
        struct Other: Sendable {}
        // EmbeddedChannel's head refuses the user events that reach it: this one got there.
        #expect(throws: ChannelError.operationUnsupported) { try channel.triggerUserOutboundEvent(Other()).wait() }
        // Start does not travel on.
        try channel.triggerUserOutboundEvent(ReadBatchingHandler.Start()).wait()
    }

    /// Finding 7 through a real loopback socket: the server side's receive buffer is fixed at
    /// 128 KiB (SO_RCVBUF 64 KiB, which the kernel doubles and which turns off autotuning) and
    /// NIO reads one 64 KiB buffer per cycle, so no cycle reaches the former 128 KiB threshold.
    /// A sender with 8 MiB ready must be drained with at most a few postponed reads (each at
    /// most 200 ms); the former rule postponed every read (128 of them, 25 s). Counted, not timed.
    @Test func aBacklogFarLargerThanTheWindowIsDrainedWithoutWaits() async throws {
        let backlog = 8 << 20
        let allowedWaits = 4
        let group = MultiThreadedEventLoopGroup.singleton
        let outcome = group.next().makePromise(of: (drained: Int, waits: Int).self)
        let server = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_rcvbuf), value: 64 << 10)
            .childChannelOption(.maxMessagesPerRead, value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let batching = ReadBatchingHandler(delay: .milliseconds(200))
                    try channel.pipeline.syncOperations.addHandler(batching)
                    try channel.pipeline.syncOperations.addHandler(
                        DrainCounter(batching: batching, target: backlog, allowedWaits: allowedWaits, outcome: outcome))
                    channel.pipeline.syncOperations.triggerUserOutboundEvent(ReadBatchingHandler.Start(), promise: nil)
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let client = try await ClientBootstrap(group: group)
            .connect(host: "127.0.0.1", port: server.localAddress!.port!).get()
        // Not awaited: under the former rule the write would take 25 s to complete.
        client.writeAndFlush(ByteBuffer(repeating: 0x5A, count: backlog), promise: nil)
        let result = try await outcome.futureResult.get()
        try? await client.close()
        try? await server.close()
        #expect(result.drained == backlog, "read \(result.drained) of \(backlog) bytes before the \(result.waits)th postponed read")
        #expect(result.waits <= allowedWaits)
    }

    // MARK: - ReadPacing, without sockets

    private static let delay: Int64 = 200_000_000

    @Test func pacingWaitsTheFullDelayForALiveSessionOnARoomySocket() {
        var pacing = ReadPacing(maxDelay: Self.delay)
        pacing.start()
        let socket = ReadPacing.Socket(queued: 0, capacity: 2 << 20)
        var now: Int64 = 0
        pacing.cycleCompleted(at: now)
        // 2×720p + Opus: ~146 KB per 200 ms.
        for _ in 0..<20 {
            #expect(pacing.nextRead(socket: socket) == .wait(nanoseconds: Self.delay))
            now += Self.delay
            pacing.received(146_000)
            pacing.cycleCompleted(at: now)
        }
    }

    @Test func pacingShortensTheWaitSoALiveSessionNeverFillsASmallSocket() {
        var pacing = ReadPacing(maxDelay: Self.delay)
        pacing.start()
        let socket = ReadPacing.Socket(queued: 0, capacity: 384 << 10)
        pacing.cycleCompleted(at: 0)
        pacing.received(146_000)
        pacing.cycleCompleted(at: Self.delay)
        // 730 KB/s fills a quarter of 384 KiB in ~135 ms.
        guard case .wait(let nanoseconds) = pacing.nextRead(socket: socket) else {
            Issue.record("expected a wait")
            return
        }
        #expect(nanoseconds < Self.delay)
        #expect(Double(nanoseconds) * 730_000 / 1e9 <= Double(socket.capacity / 4))
    }

    @Test func pacingReadsAtOnceWhatIsQueuedOrWindowLimited() {
        var pacing = ReadPacing(maxDelay: Self.delay)
        #expect(pacing.nextRead(socket: nil) == .readNow)  // not streaming yet
        pacing.start()
        pacing.cycleCompleted(at: 0)
        pacing.received(100)
        pacing.cycleCompleted(at: 1_000_000)
        #expect(pacing.nextRead(socket: .init(queued: 0, capacity: 131_072)) == .wait(nanoseconds: Self.delay))
        #expect(pacing.nextRead(socket: .init(queued: 1, capacity: 131_072)) == .readNow)
        pacing.received(110_592)
        pacing.cycleCompleted(at: 2_000_000)
        #expect(pacing.nextRead(socket: .init(queued: 0, capacity: 131_072)) == .readNow)
        #expect(ReadPacing(maxDelay: 0).nextRead(socket: nil) == .readNow)
    }

    /// A backlog over a long path: the sender refills the window one round trip after each
    /// read, so when NIO asks for the next read nothing is queued yet (rule 1 cannot help). A
    /// simulated connection (RTT 20 ms, an endless sender) read for 20 s of simulated time, with
    /// finding 7's window (108 KiB of a 128 KiB buffer) and with a window clamped to a third of
    /// the buffer: the former rule moves one window per 200 ms; the new one must come close to
    /// the path's own limit (one window per RTT) and take few waits.
    @Test(arguments: [110_592, 43_690])
    func pacingDoesNotThrottleABacklogOnALongPath(window: Int) {
        let capacity = 131_072
        let rtt: Int64 = 20_000_000, horizon: Int64 = 20_000_000_000

        /// Bytes read and waits taken when `decide` (given the last cycle's size) paces the reads.
        func simulate(_ decide: (ReadPacing, Int, ReadPacing.Socket) -> ReadPacing.Decision) -> (drained: Int, waits: Int) {
            var pacing = ReadPacing(maxDelay: Self.delay)
            pacing.start()
            var now: Int64 = 0, queued = window, drained = 0, waits = 0, lastCycle = 0
            var arrivals: [(at: Int64, bytes: Int)] = []
            func deliver() {
                while let first = arrivals.first, first.at <= now {
                    queued += first.bytes
                    arrivals.removeFirst()
                }
            }
            pacing.cycleCompleted(at: 0)
            while now < horizon {
                deliver()
                if case .wait(let ns) = decide(pacing, lastCycle, .init(queued: queued, capacity: capacity)) {
                    waits += 1
                    now += ns
                    deliver()
                }
                // The read is pending now: it happens as soon as bytes are there.
                if queued == 0, let first = arrivals.first {
                    now = max(now, first.at)
                    deliver()
                }
                pacing.received(queued)
                drained += queued
                lastCycle = queued
                // The window reopens; the sender's bytes land one RTT later.
                arrivals.append((now + rtt, queued))
                queued = 0
                now += 100_000  // the cycle's own work
                pacing.cycleCompleted(at: now)
            }
            return (drained, waits)
        }
        let new = simulate { pacing, _, socket in pacing.nextRead(socket: socket) }
        // The former rule: wait unless the last cycle brought 128 KiB.
        let old = simulate { _, lastCycle, _ in lastCycle >= 128 << 10 ? .readNow : .wait(nanoseconds: Self.delay) }
        let pathLimit = Int(horizon / rtt) * window
        #expect(old.drained < pathLimit / 5)  // the throttle being fixed: one window per 200 ms
        #expect(new.drained > pathLimit / 2, "drained \(new.drained) of at most \(pathLimit) bytes, \(new.waits) waits")
        // With the clamped window rule 3 keeps waiting, but less than an RTT: the waits cost nothing.
        if window >= capacity / 2 { #expect(new.waits < 20) }
    }

    @Test func pacingWaitsAgainOnceTheBacklogIsGone() {
        var pacing = ReadPacing(maxDelay: Self.delay)
        pacing.start()
        let socket = ReadPacing.Socket(queued: 0, capacity: 1 << 20)
        var now: Int64 = 0
        pacing.cycleCompleted(at: now)
        // Backlog: 256 KiB cycles every millisecond for a second (read at once from the first
        // measured period on).
        for cycle in 0..<1000 {
            now += 1_000_000
            pacing.received(256 << 10)
            pacing.cycleCompleted(at: now)
            if cycle >= 50 { #expect(pacing.nextRead(socket: socket) == .readNow) }
        }
        // Caught up: one sample (6.6 KB) every 9 ms, read at once until a period shows the rate.
        var waited = false
        for _ in 0..<20 where !waited {
            now += 9_000_000
            pacing.received(6_600)
            pacing.cycleCompleted(at: now)
            waited = pacing.nextRead(socket: socket) == .wait(nanoseconds: Self.delay)
        }
        #expect(waited)
    }
}

/// Counts the bytes a connection reads; reports when all have arrived or when the read
/// batching has postponed more reads than allowed (so the former rule fails fast, not in 25 s).
private final class DrainCounter: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    private let batching: ReadBatchingHandler
    private let target: Int
    private let allowedWaits: Int
    private let outcome: EventLoopPromise<(drained: Int, waits: Int)>
    private var drained = 0
    private var reported = false

    init(batching: ReadBatchingHandler, target: Int, allowedWaits: Int, outcome: EventLoopPromise<(drained: Int, waits: Int)>) {
        self.batching = batching
        self.target = target
        self.allowedWaits = allowedWaits
        self.outcome = outcome
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        drained += unwrapInboundIn(data).readableBytes
        if !reported, drained >= target || batching.delayedReads > allowedWaits {
            reported = true
            outcome.succeed((drained, batching.delayedReads))
        }
    }
}

@Suite struct MessageBatchDecoderTests {
    private func frames(_ messages: [Message]) throws -> ByteBuffer {
        var buffer = ByteBuffer()
        for m in messages { try FrameEncoder().encode(m, into: &buffer) }
        return buffer
    }

    private static let heartbeat = Message.heartbeat(Heartbeat(nonce: 1, originTime: 2))

    @Test func everyMessageOfOneReadCycleArrivesAsOneBatch() throws {
        let channel = EmbeddedChannel(handler: MessageBatchDecoderHandler(limits: .default))
        var bytes = try frames([Self.heartbeat, Self.heartbeat, Self.heartbeat])
        // Split mid-frame across two reads of the same cycle.
        let first = bytes.readSlice(length: 20)!
        channel.pipeline.fireChannelRead(NIOAny(first))
        channel.pipeline.fireChannelRead(NIOAny(bytes))
        #expect(try channel.readInbound(as: InboundBatch.self)?.messages == nil)
        channel.pipeline.fireChannelReadComplete()
        let batch = try #require(try channel.readInbound(as: InboundBatch.self)?.messages)
        #expect(batch.count == 3)
        // An empty cycle passes nothing on.
        channel.pipeline.fireChannelReadComplete()
        #expect(try channel.readInbound(as: InboundBatch.self)?.messages == nil)
    }

    /// t4 of a clock exchange is the read's time: not the first partial read, and not the end
    /// of the cycle (nor whenever the connection task gets to the batch).
    @Test func aBatchCarriesTheTimeOfTheReadThatDecodedItsFirstMessage() throws {
        let channel = EmbeddedChannel(handler: MessageBatchDecoderHandler(limits: .default))
        var bytes = try frames([Self.heartbeat, Self.heartbeat])
        channel.pipeline.fireChannelRead(NIOAny(bytes.readSlice(length: 20)!))
        let before = monotonicNanoseconds()
        channel.pipeline.fireChannelRead(NIOAny(bytes))
        let after = monotonicNanoseconds()
        channel.pipeline.fireChannelReadComplete()
        let batch = try #require(try channel.readInbound(as: InboundBatch.self))
        #expect(batch.messages.count == 2)
        #expect(batch.readAt >= before && batch.readAt <= after)
    }

    @Test func messagesBeforeAViolationArriveBeforeTheError() throws {
        let channel = EmbeddedChannel(handler: MessageBatchDecoderHandler(limits: .default))
        var bytes = try frames([Self.heartbeat])
        bytes.writeBytes([UInt8](repeating: 0xEE, count: 32))
        channel.pipeline.fireChannelRead(NIOAny(bytes))
        #expect(throws: ProtocolError.self) { try channel.throwIfErrorCaught() }
        let batch = try #require(try channel.readInbound(as: InboundBatch.self)?.messages)
        #expect(batch.count == 1)
        // Later bytes are ignored once the stream is broken.
        try channel.writeInbound(try frames([Self.heartbeat]))
        channel.pipeline.fireChannelReadComplete()
        #expect(try channel.readInbound(as: InboundBatch.self)?.messages == nil)
    }
}

/// The server's heartbeat times are taken in the pipeline, not in the connection task.
@Suite struct HeartbeatStampingTests {
    @Test func heartbeatsAndRepliesAreStampedWhenTheyReachThePipeline() throws {
        let clock = NIOLockedValueBox<Int64>(5_000)
        let channel = EmbeddedChannel(handler: HeartbeatStampingHandler(now: { clock.withLockedValue { $0 } }))
        try channel.writeOutbound(Message.heartbeat(Heartbeat(nonce: 7, originTime: 1)))
        #expect(try channel.readOutbound(as: Message.self) == .heartbeat(Heartbeat(nonce: 7, originTime: 5_000)))
        clock.withLockedValue { $0 = 9_000 }
        try channel.writeOutbound(Message.heartbeatReply(HeartbeatReply(nonce: 3, originTime: 10, receiveTime: 8_000, transmitTime: 8_000)))
        #expect(try channel.readOutbound(as: Message.self) == .heartbeatReply(HeartbeatReply(nonce: 3, originTime: 10, receiveTime: 8_000, transmitTime: 9_000)))
        // A reply is never sent before its heartbeat arrived, whatever the clock says.
        try channel.writeOutbound(Message.heartbeatReply(HeartbeatReply(nonce: 4, originTime: 10, receiveTime: 9_500, transmitTime: 9_500)))
        #expect(try channel.readOutbound(as: Message.self) == .heartbeatReply(HeartbeatReply(nonce: 4, originTime: 10, receiveTime: 9_500, transmitTime: 9_500)))
        let ack = Message.ack(Ack(sessionID: try SessionID(validating: "s-1"), sequence: 9))
        try channel.writeOutbound(ack)
        #expect(try channel.readOutbound(as: Message.self) == ack)
    }
}

import NIOCore
import NIOEmbedded
import NIOTLS
@testable import RecordServerCore
import Shared
import Testing

/// The bounds a peer is held to (protocol.md §7.4, §9), without sockets: the deadlines as a
/// pure value fed made-up instants, the shared budgets, and the decoder handler on an
/// EmbeddedChannel.
@Suite struct IngestBudgetTests {
    private static let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000_000)
    private static func at(_ seconds: Double) -> NIODeadline { t0 + .nanoseconds(Int64(seconds * 1e9)) }

    private func deadlines() -> InboundDeadlines {
        var budgets = IngestBudgets()
        budgets.helloDeadline = .seconds(10)
        budgets.idleTimeout = .seconds(30)
        budgets.frameGrace = .seconds(10)
        budgets.minFrameBytesPerSecond = 1000
        return InboundDeadlines(budgets: budgets, connectedAt: Self.t0)
    }

    @Test func theHelloMustCompleteWithinItsDeadlineWhateverTrickles() {
        var d = deadlines()
        #expect(d.nextDeadline() == (Self.at(10), .hello))
        // A byte of the Hello at 9 s does not move the deadline.
        d.observe(now: Self.at(9), framesCompleted: 0, partialFrame: (true, nil))
        #expect(d.expired(at: Self.at(9.9)) == nil)
        #expect(d.expired(at: Self.at(10)) == .hello)
    }

    @Test func idleCountsFromTheLastCompleteFrameNotTheLastByte() {
        var d = deadlines()
        d.observe(now: Self.at(1), framesCompleted: 1, partialFrame: (false, nil))
        #expect(d.nextDeadline() == (Self.at(31), .idle))
        // Single bytes of a frame header keep arriving; only the frame deadline applies to them.
        d.observe(now: Self.at(2), framesCompleted: 1, partialFrame: (true, nil))
        d.observe(now: Self.at(11.5), framesCompleted: 1, partialFrame: (true, nil))
        #expect(d.expired(at: Self.at(11.9)) == nil)
        #expect(d.expired(at: Self.at(12)) == .frame, "a header must complete within the 10 s grace")
    }

    @Test func aFrameGetsTheGracePlusItsLengthAtTheMinimumRate() {
        var d = deadlines()
        d.observe(now: Self.at(1), framesCompleted: 1, partialFrame: (false, nil))
        d.observe(now: Self.at(2), framesCompleted: 1, partialFrame: (true, 50_000))
        // 10 s grace + 50 000 bytes at 1000 B/s = 60 s after the frame began.
        #expect(d.nextDeadline() == (Self.at(62), .frame))
        #expect(d.expired(at: Self.at(61.9)) == nil)
        #expect(d.expired(at: Self.at(62)) == .frame)
        // Completing it resets both clocks.
        d.observe(now: Self.at(50), framesCompleted: 2, partialFrame: (false, nil))
        #expect(d.nextDeadline() == (Self.at(80), .idle))
    }

    @Test func timeTheServerSpentNotReadingDoesNotCount() {
        var d = deadlines()
        d.observe(now: Self.at(1), framesCompleted: 1, partialFrame: (true, 0))
        d.shift(by: .seconds(100))
        #expect(d.nextDeadline() == (Self.at(111), .frame))
    }

    @Test func aSharedBudgetRefusesWhatDoesNotFitAndTakesBackWhatIsReleased() {
        let budget = SharedByteBudget(name: "test", limit: 100)
        #expect(budget.charge(60))
        #expect(!budget.charge(41))
        #expect(budget.inUse == 60)
        #expect(budget.charge(40))
        budget.release(60)
        #expect(budget.inUse == 40)
        #expect(budget.charge(60))
        #expect(!budget.charge(1))
    }

    // MARK: The handler

    private func makeChannel(partialLimit: Int = 1 << 20, preAuthLimit: Int = 64 << 10, alpn: String? = nil)
        throws -> (EmbeddedChannel, SharedByteBudget, SharedByteBudget) {
        let partial = SharedByteBudget(name: "partial", limit: partialLimit)
        let preAuth = SharedByteBudget(name: "preauth", limit: preAuthLimit)
        let guards = MessageBatchDecoderHandler.Guards(budgets: IngestBudgets(), partialFrames: partial, preAuthentication: preAuth,
                                                       metrics: NoMetrics(), requiredALPN: alpn)
        let channel = EmbeddedChannel(handler: MessageBatchDecoderHandler(limits: .default, guards: guards))
        return (channel, partial, preAuth)
    }

    private static func frame(_ message: Message) throws -> ByteBuffer { try FrameEncoder().encode(message) }
    private static let hello = Message.hello(Hello(agentID: "cam-1", softwareVersion: "test"))

    private func error(_ body: () throws -> Void) -> ProtocolError? {
        do { try body() } catch let error as ProtocolError { return error } catch { return nil }
        return nil
    }

    @Test func aFirstFrameLargerThanAHelloIsRefusedBeforeItIsBuffered() throws {
        let (channel, _, preAuth) = try makeChannel()
        let header: [UInt8] = Array("MCRP".utf8) + [1, 0x01, 0, 0] + [0, 0x01, 0x00, 0x01]  // Hello of 65 537 bytes
        let refused = error { try channel.writeInbound(ByteBuffer(bytes: header)) }
        #expect(refused?.code == .frameTooLarge)
        #expect(preAuth.inUse == 0)
    }

    @Test func beforeAuthenticationNothingIsReadPastTheHelloAndPartialBytesUseThePreAuthenticationBudget() throws {
        let (channel, partial, preAuth) = try makeChannel()
        let reads = ReadCounter()
        try channel.pipeline.syncOperations.addHandler(reads, position: .first)
        var bytes = try Self.frame(Self.hello)
        let next = try Self.frame(.heartbeat(Heartbeat(nonce: 1, originTime: 2)))
        bytes.writeImmutableBuffer(next.getSlice(at: next.readerIndex, length: 5)!)
        try channel.writeInbound(bytes)
        #expect(preAuth.inUse == 5, "the 5 bytes of the next frame are held before authentication")
        channel.read()
        #expect(reads.reads == 0, "no read past the Hello until the connection task accepts it")
        try channel.triggerUserOutboundEvent(MessageBatchDecoderHandler.Authenticated()).wait()
        #expect(reads.reads == 1, "the held read goes on once the peer is authenticated")
        #expect(preAuth.inUse == 0 && partial.inUse == 5, "its partial bytes move to the server-wide budget")
        try channel.writeInbound(next.getSlice(at: next.readerIndex + 5, length: next.readableBytes - 5)!)
        #expect(partial.inUse == 0)
        _ = try channel.finish()
    }

    @Test func aPartialFrameThatDoesNotFitTheServerWideBudgetClosesThatConnection() throws {
        let (channel, partial, _) = try makeChannel(partialLimit: 1000)
        try channel.writeInbound(try Self.frame(Self.hello))
        try channel.triggerUserOutboundEvent(MessageBatchDecoderHandler.Authenticated()).wait()
        // A Sample header announcing 4000 bytes and 978 of them: 990 bytes held, they fit. Eleven more do not.
        let header: [UInt8] = Array("MCRP".utf8) + [1, 0x20, 0, 0] + [0, 0, 0x0F, 0xA0]
        try channel.writeInbound(ByteBuffer(bytes: header + [UInt8](repeating: 0, count: 978)))
        #expect(partial.inUse == 990)
        let refused = error { try channel.writeInbound(ByteBuffer(bytes: [UInt8](repeating: 0, count: 11))) }
        #expect(refused?.code == .budgetExhausted && refused?.scope == .connection)
        #expect(partial.inUse == 0, "a refused connection gives its bytes back")
    }

    @Test func aTLSHandshakeWithoutTheProtocolsALPNIsRefused() throws {
        let (channel, _, _) = try makeChannel(alpn: "mcrp/1")
        channel.pipeline.fireUserInboundEventTriggered(TLSUserEvent.handshakeCompleted(negotiatedProtocol: nil))
        let refused = error { try channel.throwIfErrorCaught() }
        #expect(refused?.code == .handshakeRequired)
        let (good, _, _) = try makeChannel(alpn: "mcrp/1")
        good.pipeline.fireUserInboundEventTriggered(TLSUserEvent.handshakeCompleted(negotiatedProtocol: "mcrp/1"))
        #expect(error { try good.throwIfErrorCaught() } == nil)
    }
}

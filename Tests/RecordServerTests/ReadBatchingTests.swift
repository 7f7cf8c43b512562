import NIOCore
import NIOEmbedded
@testable import RecordServerCore
import Testing
import Shared

@Suite struct ReadBatchingTests {
    /// - Parameter streaming: send `ReadBatchingHandler.Start` first, as a connection does once
    ///   its session streams.
    private func makeChannel(delay: TimeAmount = .milliseconds(100), busy: Int = 1000,
                             streaming: Bool = true) throws -> (EmbeddedChannel, ReadCounter) {
        let counter = ReadCounter()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(counter)
        try channel.pipeline.syncOperations.addHandler(ReadBatchingHandler(delay: delay, busyCycleBytes: busy))
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
        let (channel, counter) = try makeChannel()
        try cycle(channel, bytes: 10)
        channel.read()
        channel.read()  // a second request while one waits adds nothing
        #expect(counter.reads == 0)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(99))
        #expect(counter.reads == 0)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(counter.reads == 1)
    }

    @Test func aBusyConnectionIsReadAtOnce() throws {
        let (channel, counter) = try makeChannel(busy: 1000)
        // Two reads in one cycle add up to the busy threshold.
        try cycle(channel, bytes: 600, 400)
        channel.read()
        #expect(counter.reads == 1)
        // The next cycle is small again: back to waiting.
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

    @Test func otherOutboundEventsPassThrough() throws {
        let (channel, _) = try makeChannel(streaming: false)
        struct Other: Sendable {}
        // EmbeddedChannel's head refuses the user events that reach it: this one got there.
        #expect(throws: ChannelError.operationUnsupported) { try channel.triggerUserOutboundEvent(Other()).wait() }
        // Start does not travel on.
        try channel.triggerUserOutboundEvent(ReadBatchingHandler.Start()).wait()
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
        #expect(try channel.readInbound(as: [Message].self) == nil)
        channel.pipeline.fireChannelReadComplete()
        let batch = try #require(try channel.readInbound(as: [Message].self))
        #expect(batch.count == 3)
        // An empty cycle passes nothing on.
        channel.pipeline.fireChannelReadComplete()
        #expect(try channel.readInbound(as: [Message].self) == nil)
    }

    @Test func messagesBeforeAViolationArriveBeforeTheError() throws {
        let channel = EmbeddedChannel(handler: MessageBatchDecoderHandler(limits: .default))
        var bytes = try frames([Self.heartbeat])
        bytes.writeBytes([UInt8](repeating: 0xEE, count: 32))
        channel.pipeline.fireChannelRead(NIOAny(bytes))
        #expect(throws: ProtocolError.self) { try channel.throwIfErrorCaught() }
        let batch = try #require(try channel.readInbound(as: [Message].self))
        #expect(batch.count == 1)
        // Later bytes are ignored once the stream is broken.
        try channel.writeInbound(try frames([Self.heartbeat]))
        channel.pipeline.fireChannelReadComplete()
        #expect(try channel.readInbound(as: [Message].self) == nil)
    }
}

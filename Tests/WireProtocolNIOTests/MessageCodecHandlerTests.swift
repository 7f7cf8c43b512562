import NIOCore
import NIOEmbedded
import Testing
import WireProtocol
import WireProtocolNIO

@Suite("The protocol's channel handlers, in EmbeddedChannels")
struct MessageCodecHandlerTests {
    static let hello = Message.hello(Hello(agentID: "cam-a", softwareVersion: "test/1"))
    static let heartbeat = Message.heartbeat(Heartbeat(nonce: 7, originTime: 1_000))

    static func frames(_ messages: [Message]) throws -> ByteBuffer {
        var buffer = ByteBuffer()
        for message in messages { try FrameEncoder().encode(message, into: &buffer) }
        return buffer
    }

    /// A sample whose payload is `size` bytes.
    static func sample(size: Int) -> Message {
        .sample(Sample(track: 1, flags: [.keyframe], sequence: 1, pts: 0, dts: 0, duration: 33_333_333,
                       data: ByteBuffer(repeating: 0x5A, count: size)))
    }

    @Test("written messages leave as the encoder's frames; received frames arrive as messages, two in one read")
    func roundTrip() throws {
        let channel = EmbeddedChannel(handler: MessageCodecHandler())
        try channel.writeOutbound(Self.hello)
        #expect(try channel.readOutbound(as: ByteBuffer.self) == FrameEncoder().encode(Self.hello))

        let reply = Message.helloReply(HelloReply(serverID: "rec-1", softwareVersion: "server/1"))
        try channel.writeInbound(Self.frames([reply, Self.heartbeat]))
        #expect(try channel.readInbound(as: Message.self) == reply)
        #expect(try channel.readInbound(as: Message.self) == Self.heartbeat)
        #expect(try channel.readInbound(as: Message.self) == nil)
    }

    @Test("a frame split across reads, one byte at a time, arrives once, whole")
    func dripFed() throws {
        let channel = EmbeddedChannel(handler: MessageCodecHandler())
        var bytes = try Self.frames([Self.heartbeat])
        while let byte = bytes.readSlice(length: 1) {
            #expect(try channel.readInbound(as: Message.self) == nil)
            try channel.writeInbound(byte)
        }
        #expect(try channel.readInbound(as: Message.self) == Self.heartbeat)
    }

    @Test("a protocol violation is fired once, as the ProtocolError, and later bytes are ignored")
    func violationFiredOnce() throws {
        let channel = EmbeddedChannel(handler: MessageCodecHandler())
        var garbage = try Self.frames([Self.heartbeat])
        garbage.setInteger(UInt8(0xEE), at: 0)  // magic broken
        #expect(throws: ProtocolError(.badMagic, "")) { try channel.writeInbound(garbage) }
        try channel.writeInbound(Self.frames([Self.heartbeat]))  // no second error
        #expect(try channel.readInbound(as: Message.self) == nil)
    }

    @Test("after a HelloReply, outbound frames keep the limits the server announced; a refused message is fired and the next goes out")
    func followsTheHelloReply() throws {
        let channel = EmbeddedChannel(handler: MessageCodecHandler())
        // Before the handshake the protocol's own limits apply: 4 KiB is fine.
        try channel.writeOutbound(Self.sample(size: 4096))
        #expect(try channel.readOutbound(as: ByteBuffer.self) != nil)

        var announced = ProtocolLimits.default
        announced.maxFramePayload = 1024
        try channel.writeInbound(Self.frames([.helloReply(HelloReply(serverID: "rec-1", softwareVersion: "server/1", limits: announced.announced))]))
        #expect(try channel.readInbound(as: Message.self) != nil)

        let refused = channel.writeAndFlush(Self.sample(size: 4096))
        #expect(throws: ProtocolError(.frameTooLarge, "")) { try refused.wait() }
        #expect {
            try channel.throwIfErrorCaught()
        } throws: { error in
            (error as? MessageEncodingFailure)?.error.code == .frameTooLarge && (error as? MessageEncodingFailure)?.type == .sample
        }
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)  // nothing of it written

        try channel.writeOutbound(Self.sample(size: 512))
        #expect(try channel.readOutbound(as: ByteBuffer.self) == FrameEncoder().encode(Self.sample(size: 512)))
    }

    @Test("the server's encoder fails only the refused write's promise; the connection goes on")
    func serverEncoderRefusal() throws {
        let channel = EmbeddedChannel(handler: MessageEncoderHandler(encoder: FrameEncoder(limits: ProtocolLimits(maxFramePayload: 1024))))
        let refused = channel.writeAndFlush(Self.sample(size: 4096))
        #expect(throws: ProtocolError(.frameTooLarge, "")) { try refused.wait() }
        try channel.throwIfErrorCaught()  // nothing fired
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)
        try channel.writeOutbound(Self.heartbeat)
        #expect(try channel.readOutbound(as: ByteBuffer.self) == FrameEncoder().encode(Self.heartbeat))
    }
}

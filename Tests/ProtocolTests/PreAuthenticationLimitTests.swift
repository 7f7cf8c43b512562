import NIOCore
import Testing
import WireProtocol

/// Before the peer is authenticated every frame is held to a small payload limit, checked on
/// the header before any payload byte is buffered (protocol.md §9).
@Suite struct PreAuthenticationLimitTests {
    private func header(type: UInt8, length: UInt32) -> [UInt8] {
        Array("MCRP".utf8) + [1, type, 0, 0] + withUnsafeBytes(of: length.bigEndian, Array.init)
    }

    @Test func aFrameOverTheLimitIsRefusedOnItsHeader() {
        var parser = FrameParser(preAuthenticationMaxPayload: 65_536)
        parser.append(contentsOf: header(type: 0x01, length: 65_537))
        #expect(throws: ProtocolError(.frameTooLarge, "")) { try parser.nextFrame() }
    }

    @Test func aFrameAtTheLimitIsAcceptedAndTheLimitLiftsOnRequest() throws {
        var parser = FrameParser(preAuthenticationMaxPayload: 16)
        parser.append(contentsOf: header(type: 0x03, length: 16) + [UInt8](repeating: 0, count: 16))
        #expect(try parser.nextFrame()?.payload.readableBytes == 16)
        parser.liftPreAuthenticationLimit()
        parser.append(contentsOf: header(type: 0x20, length: 100_000))
        #expect(try parser.nextFrame() == nil, "waits for the payload instead of refusing it")
        #expect(parser.pendingPayloadLength == 100_000)
        #expect(parser.holdsPartialFrame)
    }

    @Test func theSecondFrameIsStillLimitedUntilTheLimitIsLifted() throws {
        var parser = FrameParser(preAuthenticationMaxPayload: 16)
        parser.append(contentsOf: header(type: 0x03, length: 0) + header(type: 0x20, length: 17))
        #expect(try parser.nextFrame() != nil)
        #expect(throws: ProtocolError(.frameTooLarge, "")) { try parser.nextFrame() }
    }
}

import NIOCore
import Testing
import Shared
import WireProtocol

/// The parser's result must not depend on how the byte stream was split (protocol.md §3).
@Suite("Drip-feed: chunking does not change the result")
struct DripFeedTests {
    @Test("one byte at a time gives the same messages")
    func oneByteAtATime() {
        let stream = Fixtures.stream
        let whole = parse(stream)
        let dripped = parse(stream, chunks: Array(repeating: 1, count: stream.count))
        #expect(whole.error == nil && dripped.error == nil)
        #expect(dripped.messages == whole.messages)
        #expect(dripped.messages == Fixtures.all.map(\.message))
    }

    @Test("one byte at a time through append(contentsOf:) gives the same messages")
    func byteSequenceAppend() throws {
        var parser = MessageParser()
        var messages: [Message] = []
        for byte in Fixtures.stream {
            parser.append(contentsOf: [byte])
            while let m = try parser.nextMessage() { messages.append(m) }
        }
        #expect(messages == Fixtures.all.map(\.message))
        #expect(parser.bufferedByteCount == 0)
    }

    @Test("seeded random splits give the same messages", arguments: [UInt64(1), 2, 3, 0xDEAD_BEEF])
    func randomSplits(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        // A longer stream: the fixtures three times plus random valid messages.
        var stream = Fixtures.stream + Fixtures.stream
        for _ in 0..<100 { stream += try! encode(RandomMessages.make(using: &rng)) }
        stream += Fixtures.stream
        let whole = parse(stream)
        #expect(whole.error == nil)
        for _ in 0..<50 {
            var chunks: [Int] = []
            var total = 0
            while total < stream.count {
                let size = Int.random(in: 0...Int.random(in: 1...200, using: &rng), using: &rng)
                chunks.append(size)
                total += size
            }
            let split = parse(stream, chunks: chunks)
            #expect(split.error == nil)
            #expect(split.messages == whole.messages)
        }
    }

    @Test("malformed streams fail with the same error and the same messages before it, however split",
          arguments: MalformedInputTests.cases.map(\.name))
    func malformedSplits(name: String) throws {
        let bad = try #require(MalformedInputTests.cases.first { $0.name == name })
        let stream = Fixtures.stream + bad.bytes + Fixtures.stream
        let whole = parse(stream)
        #expect(whole.error?.code == bad.code)
        let dripped = parse(stream, chunks: Array(repeating: 1, count: stream.count))
        #expect(dripped.error?.code == whole.error?.code)
        #expect(dripped.error?.message == whole.error?.message)
        #expect(dripped.messages == whole.messages)
        var rng = SplitMix64(seed: UInt64(truncatingIfNeeded: name.utf8.count))
        for _ in 0..<10 {
            let chunks = (0..<stream.count).map { _ in Int.random(in: 1...64, using: &rng) }
            let split = parse(stream, chunks: chunks)
            #expect(split.error?.code == whole.error?.code)
            #expect(split.messages == whole.messages)
        }
    }

    @Test("an incomplete frame is 'need more', not an error")
    func needMore() throws {
        var parser = MessageParser()
        let sample = bytes(Vectors.sample)
        parser.append(buffer(Array(sample.dropLast())))
        #expect(try parser.nextMessage() == nil)
        #expect(parser.bufferedByteCount == sample.count - 1 - 12)
        parser.append(buffer([sample.last!]))
        #expect(try parser.nextMessage() == Fixtures.sample)
        #expect(try parser.nextMessage() == nil)
    }

    @Test("the frame parser alone yields header and payload")
    func frameParser() throws {
        var parser = FrameParser()
        parser.append(buffer(bytes(Vectors.ack)))
        let frame = try #require(try parser.nextFrame())
        #expect(frame.header == FrameHeader(version: 1, type: .ack, flags: 0, payloadLength: 11))
        #expect(frame.payload.readableBytes == 11)
        #expect(try Message(decoding: frame) == Fixtures.ack)
    }
}

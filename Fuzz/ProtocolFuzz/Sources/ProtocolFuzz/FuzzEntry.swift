import NIOCore
import WireProtocol

// The fuzzed function (docs/protocol.md §11). main.swift passes it to libFuzzer's
// driver; it is also exported under libFuzzer's conventional name.
//
// Oracles, each a trap when violated:
//  1. Parsing never crashes, and never allocates for a length beyond the limits
//     (AddressSanitizer / libFuzzer's -rss_limit_mb catch the latter).
//  2. The same bytes split into input-derived chunks give the same messages and
//     the same error code as the bytes fed whole.
//  3. Every decoded message re-encodes to exactly the bytes it was decoded from.
//  4. The session validator accepts or rejects any decoded sequence without trapping.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    let input = Array(UnsafeBufferPointer(start: data, count: size))

    // Odd-sized inputs use tiny limits so the limit checks are reached often.
    let limits = size % 2 == 1
        ? ProtocolLimits(maxFramePayload: 512, maxTracksPerSession: 3, maxLabels: 2, maxStringBytes: 16,
                         maxTokenBytes: 8, maxCodecConfigBytes: 40, maxParameterSets: 2)
        : ProtocolLimits.default

    let whole = FuzzParse.run(input, limits: limits, chunkSeed: nil)
    let split = FuzzParse.run(input, limits: limits, chunkSeed: UInt64(size) &* 0x9E37_79B9 ^ UInt64(input[0]))
    precondition(whole.messages == split.messages, "split changed the messages")
    precondition(whole.error?.code == split.error?.code, "split changed the error")

    var reencoded = ByteBuffer()
    let encoder = FrameEncoder(limits: limits)
    for message in whole.messages {
        do {
            try encoder.encode(message, into: &reencoded)
        } catch {
            preconditionFailure("decoded message does not re-encode: \(error)")
        }
    }
    precondition(reencoded.readableBytesView.elementsEqual(input.prefix(reencoded.readableBytes)), "re-encoding differs")

    var validator = SessionValidator(limits: limits)
    for message in whole.messages {
        if case .resumeRequested = try? validator.validate(message) {
            validator.resumeAccepted(.init(tracks: [], highestReceived: UInt64(input[0]), acknowledged: 1))
        }
    }
    return 0
}

enum FuzzParse {
    static func run(_ input: [UInt8], limits: ProtocolLimits, chunkSeed: UInt64?) -> (messages: [Message], error: ProtocolError?) {
        var parser = MessageParser(limits: limits)
        var messages: [Message] = []
        var state = chunkSeed ?? 0
        var offset = 0
        do {
            while offset < input.count {
                var step = input.count - offset
                if chunkSeed != nil {
                    // SplitMix64 step: chunk sizes 1...32, deterministic per input.
                    state &+= 0x9E37_79B9_7F4A_7C15
                    var z = state
                    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
                    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
                    step = min(step, Int((z ^ (z >> 31)) % 32) + 1)
                }
                parser.append(ByteBuffer(bytes: input[offset..<offset + step]))
                offset += step
                while let message = try parser.nextMessage() { messages.append(message) }
            }
            return (messages, nil)
        } catch {
            return (messages, error)
        }
    }
}

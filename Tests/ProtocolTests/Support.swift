import TestSupport
import NIOCore
import WireProtocol

/// Bytes of an annotated hex block: everything after `#` on a line is a comment,
/// whitespace is ignored.
func bytes(_ annotated: String) -> [UInt8] {
    var digits: [UInt8] = []
    for line in annotated.split(separator: "\n", omittingEmptySubsequences: false) {
        let code = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        for ch in code.utf8 where !(ch == 0x20 || ch == 0x09 || ch == 0x0D) {
            switch ch {
            case 0x30...0x39: digits.append(ch - 0x30)
            case 0x41...0x46: digits.append(ch - 0x41 + 10)
            case 0x61...0x66: digits.append(ch - 0x61 + 10)
            default: preconditionFailure("not hex: \(UnicodeScalar(ch))")
            }
        }
    }
    precondition(digits.count % 2 == 0, "odd number of hex digits")
    return stride(from: 0, to: digits.count, by: 2).map { digits[$0] << 4 | digits[$0 + 1] }
}


func buffer(_ bytes: [UInt8]) -> ByteBuffer { ByteBuffer(bytes: bytes) }


/// Parses `bytes` fed in the given chunk sizes (the rest in one piece); returns the
/// messages produced and the first error, if any.
func parse(_ bytes: [UInt8], chunks: [Int]? = nil, limits: ProtocolLimits = .default) -> (messages: [Message], error: ProtocolError?) {
    var parser = MessageParser(limits: limits)
    var messages: [Message] = []
    var offset = 0
    var sizes = chunks ?? [bytes.count]
    if sizes.reduce(0, +) < bytes.count { sizes.append(bytes.count - sizes.reduce(0, +)) }
    do {
        for size in sizes where offset < bytes.count {
            let end = min(bytes.count, offset + size)
            parser.append(buffer(Array(bytes[offset..<end])))
            offset = end
            while let message = try parser.nextMessage() { messages.append(message) }
        }
        return (messages, nil)
    } catch {
        return (messages, error)
    }
}

/// Parses exactly one message from `bytes`.
func parseOne(_ bytes: [UInt8], limits: ProtocolLimits = .default) throws(ProtocolError) -> Message? {
    var parser = MessageParser(limits: limits)
    parser.append(buffer(bytes))
    return try parser.nextMessage()
}

/// The error parsing `bytes` produces, if any.
func parseError(_ bytes: [UInt8], limits: ProtocolLimits = .default) -> ProtocolError? {
    parse(bytes, limits: limits).error
}

func encode(_ message: Message) throws(ProtocolError) -> [UInt8] {
    let buffer = try FrameEncoder().encode(message)
    return Array(buffer.readableBytesView)
}

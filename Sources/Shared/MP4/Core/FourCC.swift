/// A four-character code naming a box or a brand (ISO/IEC 14496-12 §4.2).
public struct FourCC: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let value: UInt32

    public init(_ value: UInt32) { self.value = value }

    /// Builds a code from exactly four ASCII characters; anything else traps (a programming error).
    public init(stringLiteral text: String) {
        let bytes = Array(text.utf8)
        precondition(bytes.count == 4, "a FourCC has exactly four bytes: \(text)")
        value = bytes.reduce(0) { $0 << 8 | UInt32($1) }
    }

    public var description: String {
        let bytes = [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> $0) }
        if bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) {
            return String(decoding: bytes, as: UTF8.self)
        }
        return "0x" + String(value, radix: 16)
    }
}

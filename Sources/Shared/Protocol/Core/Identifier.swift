/// A validated ASCII identifier: agent ids, session ids and label keys (protocol.md §4.3).
///
/// 1...64 bytes of `[A-Za-z0-9._-]`, the first being a letter or digit. The server
/// builds file paths from session ids, so the alphabet excludes `/`, `\`, NUL and
/// whitespace, and the first-character rule excludes `.`, `..` and hidden names.
public struct Identifier: Sendable, Hashable, Comparable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let value: String

    /// Validates `value`; throws `invalidIdentifier` if it breaks the rules.
    public init(validating value: String) throws(ProtocolError) {
        guard Identifier.isValid(value.utf8) else {
            throw ProtocolError(.invalidIdentifier, "\"\(value)\" is not 1...64 of [A-Za-z0-9._-] starting with a letter or digit")
        }
        self.value = value
    }

    /// For literals in code and tests; traps on an invalid literal.
    public init(stringLiteral value: String) {
        guard Identifier.isValid(value.utf8) else { preconditionFailure("invalid identifier literal \"\(value)\"") }
        self.value = value
    }

    init(unchecked value: String) { self.value = value }

    public var description: String { value }
    public static func < (lhs: Identifier, rhs: Identifier) -> Bool { lhs.value < rhs.value }

    static func isValid<C: Collection<UInt8>>(_ bytes: C) -> Bool {
        guard let first = bytes.first, bytes.count <= ProtocolLimits.maxIdentifierBytes, isAlphanumeric(first) else {
            return false
        }
        return bytes.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") }
    }

    private static func isAlphanumeric(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
    }
}

/// A session id chosen by the agent and kept across reconnects (protocol.md §4.3).
public typealias SessionID = Identifier

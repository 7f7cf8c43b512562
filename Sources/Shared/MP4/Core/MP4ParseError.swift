/// Why bytes could not be read as ISO BMFF. Every case names the field so a
/// `recordctl verify` report can say exactly where a file went wrong.
public enum MP4ParseError: Error, Equatable, Sendable, CustomStringConvertible {
    case truncated(field: String, needed: Int, available: Int)
    case implausibleCount(field: String, count: Int, available: Int)
    case badBoxSize(type: FourCC, size: UInt64, offset: UInt64)
    case unexpectedBox(expected: FourCC, found: FourCC)
    case missingBox(FourCC, in: String)
    case unsupported(String)
    case invalid(String)

    public var description: String {
        switch self {
        case let .truncated(field, needed, available):
            "truncated: \(field) needs \(needed) bytes, \(available) left"
        case let .implausibleCount(field, count, available):
            "implausible \(field) count \(count) with \(available) bytes left"
        case let .badBoxSize(type, size, offset):
            "box '\(type)' at offset \(offset) declares impossible size \(size)"
        case let .unexpectedBox(expected, found):
            "expected box '\(expected)', found '\(found)'"
        case let .missingBox(type, parent):
            "missing box '\(type)' in \(parent)"
        case let .unsupported(what): "unsupported: \(what)"
        case let .invalid(what): "invalid: \(what)"
        }
    }
}

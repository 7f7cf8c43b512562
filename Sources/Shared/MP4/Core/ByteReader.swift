/// Reads big-endian fields from a byte slice, throwing `MP4ParseError.truncated` instead of
/// reading past the end. Every count read from a file goes through `checkedCount` before
/// anything is allocated for it.
public struct ByteReader: Sendable {
    public let bytes: [UInt8]
    public private(set) var position: Int
    public let end: Int

    public init(_ bytes: [UInt8], range: Range<Int>? = nil) {
        self.bytes = bytes
        position = range?.lowerBound ?? 0
        end = range?.upperBound ?? bytes.count
    }

    public var remaining: Int { end - position }
    public var isAtEnd: Bool { position >= end }

    @inline(__always)
    private mutating func take(_ n: Int, _ what: StaticString) throws(MP4ParseError) -> Int {
        guard n >= 0, remaining >= n else { throw .truncated(field: "\(what)", needed: n, available: remaining) }
        defer { position += n }
        return position
    }

    public mutating func u8(_ what: StaticString = "u8") throws(MP4ParseError) -> UInt8 {
        bytes[try take(1, what)]
    }
    public mutating func u16(_ what: StaticString = "u16") throws(MP4ParseError) -> UInt16 {
        let p = try take(2, what)
        return UInt16(bytes[p]) << 8 | UInt16(bytes[p + 1])
    }
    public mutating func u24(_ what: StaticString = "u24") throws(MP4ParseError) -> UInt32 {
        let p = try take(3, what)
        return UInt32(bytes[p]) << 16 | UInt32(bytes[p + 1]) << 8 | UInt32(bytes[p + 2])
    }
    public mutating func u32(_ what: StaticString = "u32") throws(MP4ParseError) -> UInt32 {
        let p = try take(4, what)
        return UInt32(bytes[p]) << 24 | UInt32(bytes[p + 1]) << 16 | UInt32(bytes[p + 2]) << 8 | UInt32(bytes[p + 3])
    }
    public mutating func u64(_ what: StaticString = "u64") throws(MP4ParseError) -> UInt64 {
        let high = try u32(what)
        return UInt64(high) << 32 | UInt64(try u32(what))
    }
    public mutating func i16(_ what: StaticString = "i16") throws(MP4ParseError) -> Int16 { Int16(bitPattern: try u16(what)) }
    public mutating func i32(_ what: StaticString = "i32") throws(MP4ParseError) -> Int32 { Int32(bitPattern: try u32(what)) }
    public mutating func i64(_ what: StaticString = "i64") throws(MP4ParseError) -> Int64 { Int64(bitPattern: try u64(what)) }
    public mutating func fourCC(_ what: StaticString = "fourcc") throws(MP4ParseError) -> FourCC { FourCC(try u32(what)) }

    public mutating func bytes(_ n: Int, _ what: StaticString = "bytes") throws(MP4ParseError) -> [UInt8] {
        let p = try take(n, what)
        return Array(bytes[p..<p + n])
    }
    public mutating func skip(_ n: Int, _ what: StaticString = "reserved") throws(MP4ParseError) {
        _ = try take(n, what)
    }
    public mutating func rest() -> [UInt8] {
        defer { position = end }
        return Array(bytes[position..<end])
    }

    /// Validates an entry count against the bytes actually left, before any allocation.
    public func checkedCount(_ count: UInt32, entrySize: Int, _ what: StaticString) throws(MP4ParseError) -> Int {
        let n = Int(count)
        guard entrySize == 0 || n <= remaining / entrySize else {
            throw .implausibleCount(field: "\(what)", count: n, available: remaining)
        }
        return n
    }

    /// Reads a u32 entry count and validates it against the bytes left after it.
    public mutating func readCount(_ what: StaticString, entrySize: Int) throws(MP4ParseError) -> Int {
        let count = try u32(what)
        return try checkedCount(count, entrySize: entrySize, what)
    }

    /// Reads a (version, flags) full-box header.
    public mutating func fullBoxHeader() throws(MP4ParseError) -> (version: UInt8, flags: UInt32) {
        (try u8("version"), try u24("flags"))
    }

    /// A sub-reader over the next `n` bytes; the parent skips past them.
    public mutating func subReader(_ n: Int, _ what: StaticString) throws(MP4ParseError) -> ByteReader {
        let p = try take(n, what)
        return ByteReader(bytes, range: p..<p + n)
    }
}

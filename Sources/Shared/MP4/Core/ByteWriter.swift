/// Appends big-endian fields to a growing byte array: the single sink every box encodes into.
public struct ByteWriter: Sendable {
    public private(set) var bytes: [UInt8]

    public init(capacity: Int = 0) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    public var count: Int { bytes.count }

    public mutating func u8(_ v: UInt8) { bytes.append(v) }
    public mutating func u16(_ v: UInt16) { bytes.append(UInt8(v >> 8)); bytes.append(UInt8(truncatingIfNeeded: v)) }
    public mutating func u24(_ v: UInt32) {
        bytes.append(UInt8(truncatingIfNeeded: v >> 16))
        bytes.append(UInt8(truncatingIfNeeded: v >> 8))
        bytes.append(UInt8(truncatingIfNeeded: v))
    }
    public mutating func u32(_ v: UInt32) {
        withUnsafeBytes(of: v.bigEndian) { bytes.append(contentsOf: $0) }
    }
    public mutating func u64(_ v: UInt64) {
        withUnsafeBytes(of: v.bigEndian) { bytes.append(contentsOf: $0) }
    }
    public mutating func i16(_ v: Int16) { u16(UInt16(bitPattern: v)) }
    public mutating func i32(_ v: Int32) { u32(UInt32(bitPattern: v)) }
    public mutating func i64(_ v: Int64) { u64(UInt64(bitPattern: v)) }
    public mutating func fourCC(_ v: FourCC) { u32(v.value) }
    public mutating func zeros(_ n: Int) { bytes.append(contentsOf: repeatElement(0, count: n)) }
    public mutating func append<C: Collection>(_ data: C) where C.Element == UInt8 { bytes.append(contentsOf: data) }

    /// Version and flags of a "full box" (§4.2.2).
    public mutating func fullBoxHeader(version: UInt8, flags: UInt32) {
        u8(version)
        u24(flags)
    }

    /// Overwrites four bytes at `offset` (used to patch offsets once a layout is final).
    public mutating func patchU32(_ v: UInt32, at offset: Int) {
        bytes[offset] = UInt8(truncatingIfNeeded: v >> 24)
        bytes[offset + 1] = UInt8(truncatingIfNeeded: v >> 16)
        bytes[offset + 2] = UInt8(truncatingIfNeeded: v >> 8)
        bytes[offset + 3] = UInt8(truncatingIfNeeded: v)
    }
}

/// `free` (§8.1.2): bytes a reader ignores. We reserve 16 bytes right after `ftyp`; on
/// finalize they become a 64-bit `mdat` header spanning the fragments (the hybrid layout).
public struct FreeSpaceBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "free"
    public var length: Int

    public init(length: Int) { self.length = length }

    public var payloadSize: Int { length }
    public func encodePayload(into w: inout ByteWriter) { w.zeros(length) }
    public init(payload r: inout ByteReader) throws(MP4ParseError) { length = r.remaining; r.skip(toEnd: ()) }
}

extension ByteReader {
    mutating func skip(toEnd _: Void) { _ = rest() }
}

/// The header of an `mdat` (§8.1.1) whose payload is written separately. Always the 16-byte
/// largesize form when `forceLarge`, so a placeholder can be patched without moving data.
public struct MediaDataHeader: Equatable, Sendable {
    public var payloadSize: UInt64
    public var forceLarge: Bool

    public init(payloadSize: UInt64, forceLarge: Bool = false) {
        self.payloadSize = payloadSize
        self.forceLarge = forceLarge
    }

    public var headerSize: Int { forceLarge || payloadSize + 8 > UInt64(UInt32.max) ? 16 : 8 }

    public func encode(into w: inout ByteWriter) {
        if headerSize == 16 {
            w.u32(1)
            w.fourCC("mdat")
            w.u64(payloadSize + 16)
        } else {
            w.u32(UInt32(payloadSize + 8))
            w.fourCC("mdat")
        }
    }

    public func encoded() -> [UInt8] {
        var w = ByteWriter(capacity: 16)
        encode(into: &w)
        return w.bytes
    }
}

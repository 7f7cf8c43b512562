/// One ISO BMFF box as a value (ISO/IEC 14496-12 §4.2). A box knows its size before it
/// is encoded, so containers and fragment offsets are computed, never patched by guesswork.
public protocol MP4Box: Sendable {
    var type: FourCC { get }
    /// Bytes after the 8- (or 16-) byte header.
    var payloadSize: Int { get }
    func encodePayload(into writer: inout ByteWriter)
}

/// A box that can be read back from its payload (used by the reader, recovery and tests).
public protocol DecodableBox: MP4Box {
    static var boxType: FourCC { get }
    init(payload: inout ByteReader) throws(MP4ParseError)
}

extension DecodableBox {
    public var type: FourCC { Self.boxType }
}

extension MP4Box {
    /// Whole box size; a payload that does not fit a 32-bit size uses the 64-bit `largesize` form.
    public var size: Int {
        let compact = 8 + payloadSize
        return compact > Int(UInt32.max) ? compact + 8 : compact
    }

    public func encode(into writer: inout ByteWriter) {
        let start = writer.count
        let total = size
        if total > Int(UInt32.max) {
            writer.u32(1)
            writer.fourCC(type)
            writer.u64(UInt64(total))
        } else {
            writer.u32(UInt32(total))
            writer.fourCC(type)
        }
        encodePayload(into: &writer)
        assert(writer.count - start == total, "box '\(type)' declared \(total) bytes, wrote \(writer.count - start)")
    }

    public func encoded() -> [UInt8] {
        var writer = ByteWriter(capacity: size)
        encode(into: &writer)
        return writer.bytes
    }
}

/// Size and encoding helpers for container boxes, whose payload is their children.
extension Sequence where Element == any MP4Box {
    var totalSize: Int { reduce(0) { $0 + $1.size } }
    func encodeAll(into writer: inout ByteWriter) { forEach { $0.encode(into: &writer) } }
}

extension Optional where Wrapped: MP4Box {
    var sizeOrZero: Int { map(\.size) ?? 0 }
}

/// A box header found while reading (§4.2): where the box is and how big it says it is.
public struct BoxHeader: Equatable, Sendable {
    public let type: FourCC
    /// Offset of the box's first byte, relative to whatever the reader was positioned over.
    public let offset: Int
    public let headerSize: Int
    public let size: Int
    public var payloadRange: Range<Int> { offset + headerSize ..< offset + size }
}

extension ByteReader {
    /// Reads the next box header and returns a reader over its payload, checking the declared
    /// size against what is left before trusting it.
    public mutating func nextBox() throws(MP4ParseError) -> (header: BoxHeader, payload: ByteReader) {
        let start = position
        let size32 = try u32("box size")
        let type = try fourCC("box type")
        var headerSize = 8
        var size = UInt64(size32)
        if size32 == 1 {
            size = try u64("box largesize")
            headerSize = 16
        } else if size32 == 0 {
            size = UInt64(end - start)
        }
        guard size >= UInt64(headerSize), size - UInt64(headerSize) <= UInt64(remaining) else {
            throw .badBoxSize(type: type, size: size, offset: UInt64(start))
        }
        let payload = try subReader(Int(size) - headerSize, "box payload")
        return (BoxHeader(type: type, offset: start, headerSize: headerSize, size: Int(size)), payload)
    }

    /// All child boxes of a container payload, in order.
    public mutating func childBoxes() throws(MP4ParseError) -> [(header: BoxHeader, payload: ByteReader)] {
        var children: [(header: BoxHeader, payload: ByteReader)] = []
        while !isAtEnd { children.append(try nextBox()) }
        return children
    }
}

/// Decodes the first child of type `B`, if any.
func decodeChild<B: DecodableBox>(_: B.Type, in children: [(header: BoxHeader, payload: ByteReader)]) throws(MP4ParseError) -> B? {
    guard var payload = children.first(where: { $0.header.type == B.boxType })?.payload else { return nil }
    return try B(payload: &payload)
}

/// Decodes the first child of type `B`, failing when it is absent.
func requireChild<B: DecodableBox>(_: B.Type, in children: [(header: BoxHeader, payload: ByteReader)], parent: String) throws(MP4ParseError) -> B {
    guard let box = try decodeChild(B.self, in: children) else { throw .missingBox(B.boxType, in: parent) }
    return box
}

/// Decodes every child of type `B`, in order.
func decodeChildren<B: DecodableBox>(_: B.Type, in children: [(header: BoxHeader, payload: ByteReader)]) throws(MP4ParseError) -> [B] {
    var result: [B] = []
    for child in children where child.header.type == B.boxType {
        var payload = child.payload
        result.append(try B(payload: &payload))
    }
    return result
}

import NIOCore

// Primitive field codecs shared by every message (protocol.md §4 "Encoding rules").
// Reads operate on a complete frame payload, so a short payload is an error
// (`truncatedField`), never "need more bytes". Every length prefix is compared with
// its limit *before* the bytes are touched, so nothing is allocated for a length
// that is out of bounds.
extension ByteBuffer {
    mutating func readWire<T: FixedWidthInteger>(_ field: StaticString, as: T.Type = T.self) throws(ProtocolError) -> T {
        guard let value = self.readInteger(endianness: .big, as: T.self) else { throw .truncated(field) }
        return value
    }

    /// An identifier (§4.3): u8 length, then 1...64 bytes of `[A-Za-z0-9._-]`, not starting with `.`, `_` or `-`.
    mutating func readIdentifier(_ field: StaticString) throws(ProtocolError) -> Identifier {
        let length = Int(try self.readWire(field, as: UInt8.self))
        guard length <= ProtocolLimits.maxIdentifierBytes else {
            throw ProtocolError(.invalidIdentifier, "\(field): \(length) bytes, at most \(ProtocolLimits.maxIdentifierBytes)")
        }
        guard self.readableBytes >= length else { throw .truncated(field) }
        let view = self.readableBytesView.prefix(length)
        guard Identifier.isValid(view) else {
            throw ProtocolError(.invalidIdentifier, "\(field): not 1...64 of [A-Za-z0-9._-] starting with a letter or digit")
        }
        // Validated ASCII, so decoding cannot repair anything.
        let string = String(decoding: view, as: UTF8.self)
        self.moveReaderIndex(forwardBy: length)
        return Identifier(unchecked: string)
    }

    /// A string (§4.2): u16 length, then that many bytes of well-formed UTF-8.
    mutating func readUTF8(_ field: StaticString, max: Int) throws(ProtocolError) -> String {
        let length = Int(try self.readWire(field, as: UInt16.self))
        guard length <= max else {
            throw ProtocolError(.stringTooLong, "\(field): \(length) bytes, at most \(max)")
        }
        guard self.readableBytes >= length else { throw .truncated(field) }
        guard let string = String(validating: self.readableBytesView.prefix(length), as: UTF8.self) else {
            throw ProtocolError(.invalidUTF8, "\(field): not well-formed UTF-8")
        }
        self.moveReaderIndex(forwardBy: length)
        return string
    }

    /// Raw bytes with a length already read and checked against its limit.
    mutating func readWireBytes(_ field: StaticString, length: Int) throws(ProtocolError) -> [UInt8] {
        guard self.readableBytes >= length, let bytes = self.readBytes(length: length) else {
            throw .truncated(field)
        }
        return bytes
    }

    /// Fails with `trailingBytes` unless the payload was consumed exactly.
    func expectFullyConsumed(_ message: StaticString) throws(ProtocolError) {
        guard self.readableBytes == 0 else {
            throw ProtocolError(.trailingBytes, "\(message): \(self.readableBytes) unexpected bytes after the last field")
        }
    }

    mutating func writeIdentifier(_ identifier: Identifier) {
        // An Identifier is validated at construction, so it fits in a u8 length.
        self.writeInteger(UInt8(identifier.value.utf8.count))
        self.writeString(identifier.value)
    }

    mutating func writeUTF8(_ string: String, _ field: StaticString, max: Int) throws(ProtocolError) {
        let count = string.utf8.count
        guard count <= max, count <= Int(UInt16.max) else {
            throw ProtocolError(.stringTooLong, "\(field): \(count) bytes, at most \(max)")
        }
        self.writeInteger(UInt16(count))
        self.writeString(string)
    }
}

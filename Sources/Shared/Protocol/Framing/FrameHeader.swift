import NIOCore

/// The fixed 12-byte header in front of every payload (protocol.md §3 "Framing").
///
/// ```
/// offset size field
///      0    4 magic           "MCRP" = 4D 43 52 50
///      4    1 version         protocol version of this frame (1)
///      5    1 type            MessageType
///      6    2 flags           reserved, must be 0
///      8    4 payload length  bytes that follow the header
/// ```
public struct FrameHeader: Sendable, Hashable {
    /// "MCRP" (multi-camera recording protocol) as a big-endian u32.
    public static let magic: UInt32 = 0x4D43_5250
    public static let size = ProtocolLimits.frameHeaderSize

    public var version: UInt8
    public var type: MessageType
    /// No flag is defined in version 1; every bit must be zero.
    public var flags: UInt16
    public var payloadLength: UInt32

    public init(version: UInt8 = ProtocolVersion.current, type: MessageType, flags: UInt16 = 0, payloadLength: UInt32) {
        self.version = version
        self.type = type
        self.flags = flags
        self.payloadLength = payloadLength
    }
}

extension ByteBuffer {
    /// Reads and validates a header, or returns nil (reader index untouched) when fewer
    /// than 12 bytes are readable. Checks run in wire order: magic, version, type,
    /// flags, length, so each malformed header has exactly one error.
    mutating func readFrameHeader(
        limits: ProtocolLimits, versions: ClosedRange<UInt8>
    ) throws(ProtocolError) -> FrameHeader? {
        guard self.readableBytes >= FrameHeader.size,
            let magic = self.getInteger(at: self.readerIndex, as: UInt32.self),
            let version = self.getInteger(at: self.readerIndex + 4, as: UInt8.self),
            let type = self.getInteger(at: self.readerIndex + 5, as: UInt8.self),
            let flags = self.getInteger(at: self.readerIndex + 6, as: UInt16.self),
            let length = self.getInteger(at: self.readerIndex + 8, as: UInt32.self)
        else { return nil }

        guard magic == FrameHeader.magic else {
            throw ProtocolError(.badMagic, "frame magic is 0x\(String(magic, radix: 16)), expected 0x4d435250 (\"MCRP\")")
        }
        guard versions.contains(version) else {
            throw ProtocolError(.unsupportedVersion, "frame version \(version), supported \(versions.lowerBound)...\(versions.upperBound)")
        }
        let messageType = MessageType(rawValue: type)
        guard messageType.isKnown else {
            throw ProtocolError(.unknownMessageType, "message type \(messageType) is not defined")
        }
        guard flags == 0 else {
            throw ProtocolError(.reservedBitsSet, "header flags 0x\(String(flags, radix: 16)) must be zero")
        }
        // The hard limit is checked here, before a single payload byte is buffered for it.
        guard length <= limits.maxFramePayload else {
            throw ProtocolError(.frameTooLarge, "payload of \(length) bytes exceeds the limit of \(limits.maxFramePayload)")
        }
        self.moveReaderIndex(forwardBy: FrameHeader.size)
        return FrameHeader(version: version, type: messageType, flags: flags, payloadLength: length)
    }

    mutating func writeFrameHeader(_ header: FrameHeader) {
        self.writeInteger(FrameHeader.magic)
        self.writeInteger(header.version)
        self.writeInteger(header.type.rawValue)
        self.writeInteger(header.flags)
        self.writeInteger(header.payloadLength)
    }
}

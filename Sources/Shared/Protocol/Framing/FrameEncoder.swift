import NIOCore

/// Serialises messages into frames (protocol.md §3, §6).
///
/// The encoder refuses to produce a frame its peer would reject: after writing the
/// payload it decodes it again with the same limits and, on failure, removes what it
/// wrote and throws. Decoding is cheap (sample data is sliced, not copied).
public struct FrameEncoder: Sendable {
    /// The version written into every header (the negotiated version).
    public var version: UInt8
    public var limits: ProtocolLimits

    public init(version: UInt8 = ProtocolVersion.current, limits: ProtocolLimits = .default) {
        self.version = version
        self.limits = limits
    }

    /// Appends one frame carrying `message` to `buffer`. On error `buffer` is unchanged.
    public func encode(_ message: Message, into buffer: inout ByteBuffer) throws(ProtocolError) {
        let start = buffer.writerIndex
        buffer.writeFrameHeader(FrameHeader(version: version, type: message.type, payloadLength: 0))
        let payloadStart = buffer.writerIndex
        do throws(ProtocolError) {
            try buffer.writeMessagePayload(message, limits: limits)
            let length = buffer.writerIndex - payloadStart
            guard length <= limits.maxFramePayload else {
                throw ProtocolError(.frameTooLarge, "payload of \(length) bytes exceeds the limit of \(limits.maxFramePayload)")
            }
            buffer.setInteger(UInt32(length), at: start + 8)
            var check = buffer.getSlice(at: payloadStart, length: length)!
            _ = try check.readMessagePayload(type: message.type, limits: limits)
        } catch {
            buffer.moveWriterIndex(to: start)
            throw error
        }
    }

    /// One frame carrying `message` in a new buffer.
    public func encode(_ message: Message) throws(ProtocolError) -> ByteBuffer {
        var buffer = ByteBuffer()
        try encode(message, into: &buffer)
        return buffer
    }
}

import NIOCore

/// Splits a byte stream into frames (protocol.md §3). Sans-I/O: feed it whatever bytes
/// arrived with ``append(_:)``, then call ``nextFrame()`` until it returns nil
/// ("need more bytes").
///
/// The result does not depend on how the stream was split: the same bytes fed in any
/// chunking give the same frames and the same error. The header is validated as soon
/// as its 12 bytes are present, and the payload length is checked against
/// ``ProtocolLimits/maxFramePayload`` before the parser waits for (or buffers
/// towards) the payload. After an error the parser is poisoned and rethrows it:
/// the stream position is no longer trustworthy.
public struct FrameParser: Sendable {
    public let limits: ProtocolLimits
    /// The header versions accepted; anything else is `unsupportedVersion`.
    public var supportedVersions: ClosedRange<UInt8>

    private var buffer: ByteBuffer
    private var pendingHeader: FrameHeader?
    private var failure: ProtocolError?

    public init(limits: ProtocolLimits = .default, supportedVersions: ClosedRange<UInt8> = ProtocolVersion.supported) {
        self.limits = limits
        self.supportedVersions = supportedVersions
        self.buffer = ByteBuffer()
    }

    /// Bytes received but not yet returned as part of a frame.
    public var bufferedByteCount: Int { buffer.readableBytes }

    /// Adds received bytes. They are copied: keeping a reference to the caller's buffer
    /// would make its next write a copy-on-write of the whole storage (NIOSSL reuses its
    /// plaintext buffer for every read), and that costs far more than this one copy.
    public mutating func append(_ bytes: ByteBuffer) {
        compactIfWorthwhile()
        buffer.writeImmutableBuffer(bytes)
    }

    /// Adds received bytes.
    public mutating func append<Bytes: Sequence>(contentsOf bytes: Bytes) where Bytes.Element == UInt8 {
        compactIfWorthwhile()
        buffer.writeBytes(bytes)
    }

    /// The next complete frame, or nil if more bytes are needed.
    public mutating func nextFrame() throws(ProtocolError) -> Frame? {
        if let failure { throw failure }
        do {
            return try parse()
        } catch {
            failure = error
            throw error
        }
    }

    private mutating func parse() throws(ProtocolError) -> Frame? {
        if pendingHeader == nil {
            guard let header = try buffer.readFrameHeader(limits: limits, versions: supportedVersions) else {
                return nil
            }
            pendingHeader = header
        }
        guard let header = pendingHeader, buffer.readableBytes >= Int(header.payloadLength) else { return nil }
        let length = Int(header.payloadLength)
        // The payload gets storage of its own: a slice would share the parser's buffer, and
        // while a consumer still held it every append would copy the whole buffer.
        var payload = ByteBuffer()
        payload.reserveCapacity(length)
        payload.writeImmutableBuffer(buffer.readSlice(length: length)!)
        pendingHeader = nil
        return Frame(header: header, payload: payload)
    }

    /// Drops consumed bytes once they dominate the buffer, so a long-lived connection
    /// does not grow its buffer without bound.
    private mutating func compactIfWorthwhile() {
        if buffer.readableBytes == 0 {
            buffer.clear()
        } else if buffer.readerIndex >= 64 * 1024 && buffer.readerIndex >= buffer.readableBytes {
            buffer.discardReadBytes()
        }
    }
}

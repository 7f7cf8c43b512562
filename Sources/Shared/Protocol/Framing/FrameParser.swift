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

    /// A lower payload limit for every frame until ``liftPreAuthenticationLimit()``: a peer
    /// that has not authenticated yet cannot make the server buffer a large frame
    /// (protocol.md §9). Nil: `limits.maxFramePayload` from the start.
    public private(set) var preAuthenticationMaxPayload: Int?

    private var buffer: ByteBuffer
    private var pendingHeader: FrameHeader?
    private var failure: ProtocolError?
    private var framesReturned = 0

    public init(limits: ProtocolLimits = .default, supportedVersions: ClosedRange<UInt8> = ProtocolVersion.supported,
                preAuthenticationMaxPayload: Int? = nil) {
        self.limits = limits
        self.supportedVersions = supportedVersions
        self.preAuthenticationMaxPayload = preAuthenticationMaxPayload
        self.buffer = ByteBuffer()
    }

    /// Bytes received but not yet returned as part of a frame.
    public var bufferedByteCount: Int { buffer.readableBytes }

    /// Whether the bytes held are the start of a frame not yet complete.
    public var holdsPartialFrame: Bool { buffer.readableBytes > 0 || pendingHeader != nil }

    /// Bytes of the frame not yet complete that this parser has received, header included.
    public var partialFrameBytes: Int { buffer.readableBytes + (pendingHeader == nil ? 0 : ProtocolLimits.frameHeaderSize) }

    /// The payload length of the frame being received, once its header has arrived.
    public var pendingPayloadLength: Int? { pendingHeader.map { Int($0.payloadLength) } }

    /// Whole frames returned so far.
    public var frameCount: Int { framesReturned }

    /// The peer is authenticated: frames up to `limits.maxFramePayload` from now on. A frame
    /// whose header was already accepted keeps its length.
    public mutating func liftPreAuthenticationLimit() { preAuthenticationMaxPayload = nil }

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
            var frameLimits = limits
            if let early = preAuthenticationMaxPayload { frameLimits.maxFramePayload = min(early, limits.maxFramePayload) }
            guard let header = try buffer.readFrameHeader(limits: frameLimits, versions: supportedVersions) else {
                return nil
            }
            pendingHeader = header
            // Room for the whole payload at once, instead of doubling the buffer (and copying
            // it) as the bytes trickle in: memory follows what arrived, never twice it. Large
            // allocations are their own mappings, so room not yet written costs nothing.
            let missing = Int(header.payloadLength) - buffer.readableBytes
            if missing > buffer.writableBytes { buffer.reserveCapacity(minimumWritableBytes: missing) }
        }
        guard let header = pendingHeader, buffer.readableBytes >= Int(header.payloadLength) else { return nil }
        let length = Int(header.payloadLength)
        // The payload gets storage of its own: a slice would share the parser's buffer, and
        // while a consumer still held it every append would copy the whole buffer.
        var payload = ByteBuffer()
        payload.reserveCapacity(length)
        payload.writeImmutableBuffer(buffer.readSlice(length: length)!)
        pendingHeader = nil
        framesReturned += 1
        return Frame(header: header, payload: payload)
    }

    /// Drops consumed bytes once they dominate the buffer, so a long-lived connection
    /// does not grow its buffer without bound.
    private mutating func compactIfWorthwhile() {
        if buffer.readableBytes == 0 {
            // After a large frame, give its room back rather than keep it for the connection's life.
            if buffer.capacity > 1 << 20 { buffer = ByteBuffer() } else { buffer.clear() }
        } else if buffer.readerIndex >= 64 * 1024 && buffer.readerIndex >= buffer.readableBytes {
            buffer.discardReadBytes()
        }
    }
}

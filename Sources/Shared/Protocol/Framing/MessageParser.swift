import NIOCore

/// Turns a byte stream into ``Message`` values: a ``FrameParser`` plus payload
/// decoding (protocol.md §3, §6). Sans-I/O and split-independent like the frame
/// parser, and likewise poisoned by its first error.
public struct MessageParser: Sendable {
    private var frames: FrameParser
    private var failure: ProtocolError?

    public init(limits: ProtocolLimits = .default, supportedVersions: ClosedRange<UInt8> = ProtocolVersion.supported,
                preAuthenticationMaxPayload: Int? = nil) {
        self.frames = FrameParser(limits: limits, supportedVersions: supportedVersions, preAuthenticationMaxPayload: preAuthenticationMaxPayload)
    }

    /// See ``FrameParser/liftPreAuthenticationLimit()``.
    public mutating func liftPreAuthenticationLimit() { frames.liftPreAuthenticationLimit() }

    public var limits: ProtocolLimits { frames.limits }

    /// The header versions accepted. After the handshake, narrow it to the negotiated
    /// version (protocol.md §5).
    public var supportedVersions: ClosedRange<UInt8> {
        get { frames.supportedVersions }
        set { frames.supportedVersions = newValue }
    }
    public var bufferedByteCount: Int { frames.bufferedByteCount }
    /// See ``FrameParser/holdsPartialFrame``, ``FrameParser/pendingPayloadLength``, ``FrameParser/frameCount``.
    public var holdsPartialFrame: Bool { frames.holdsPartialFrame }
    public var partialFrameBytes: Int { frames.partialFrameBytes }
    public var pendingPayloadLength: Int? { frames.pendingPayloadLength }
    public var frameCount: Int { frames.frameCount }

    public mutating func append(_ bytes: ByteBuffer) { frames.append(bytes) }

    public mutating func append<Bytes: Sequence>(contentsOf bytes: Bytes) where Bytes.Element == UInt8 {
        frames.append(contentsOf: bytes)
    }

    /// The next complete message, or nil if more bytes are needed.
    public mutating func nextMessage() throws(ProtocolError) -> Message? {
        if let failure { throw failure }
        do {
            guard let frame = try frames.nextFrame() else { return nil }
            return try Message(decoding: frame, limits: frames.limits)
        } catch {
            failure = error
            throw error
        }
    }

    /// Every message currently complete, stopping at the first error.
    public mutating func drain() throws(ProtocolError) -> [Message] {
        var messages: [Message] = []
        while let message = try nextMessage() { messages.append(message) }
        return messages
    }
}

import NIOCore
import WireProtocol

/// The sans-I/O ``MessageParser`` plus the two rules every decoding channel handler follows:
/// after the first protocol violation the byte stream is broken, so later bytes are ignored;
/// and, when `followsHelloReply`, frames after a ``HelloReply`` must carry the version it chose
/// (protocol.md §5), from the very next frame on, even one that arrived in the same read.
public struct MessageStreamDecoder: Sendable {
    private var parser: MessageParser
    private let limits: ProtocolLimits
    private let followsHelloReply: Bool
    private var failed = false

    /// - Parameters:
    ///   - preAuthenticationMaxPayload: see ``FrameParser/preAuthenticationMaxPayload``.
    ///   - followsHelloReply: the agent's end: narrow the accepted header versions to the one a
    ///     received ``HelloReply`` chose.
    public init(limits: ProtocolLimits = .default, preAuthenticationMaxPayload: Int? = nil, followsHelloReply: Bool = false) {
        self.limits = limits
        self.followsHelloReply = followsHelloReply
        parser = MessageParser(limits: limits, preAuthenticationMaxPayload: preAuthenticationMaxPayload)
    }

    /// Lets go of every byte held towards an incomplete frame and decodes nothing more. For a
    /// connection that is over: its handler (and this decoder) lives until the connection's
    /// task lets go of the channel, and bytes no budget counts any longer must not stay
    /// resident that long (150 partial 8 MiB frames took the server 460 MiB past its budget).
    public mutating func discardBufferedBytes() {
        failed = true
        parser = MessageParser(limits: limits)
    }

    public mutating func liftPreAuthenticationLimit() { parser.liftPreAuthenticationLimit() }

    /// Bytes held towards a frame not yet complete.
    public var partialFrameBytes: Int { parser.partialFrameBytes }
    public var frameCount: Int { parser.frameCount }
    public var partialFrame: (held: Bool, length: Int?) { (parser.holdsPartialFrame, parser.pendingPayloadLength) }

    /// Appends received bytes (none once the stream is broken).
    public mutating func append(_ bytes: ByteBuffer) {
        guard !failed else { return }
        parser.append(bytes)
    }

    /// The next whole message, or nil when more bytes are needed or the stream is broken;
    /// throws the violation once. A handler passes each message on between two calls, not
    /// while the decoder is being changed, so a pipeline that re-enters it stays correct.
    public mutating func nextMessage() throws(ProtocolError) -> Message? {
        guard !failed else { return nil }
        do throws(ProtocolError) {
            let message = try parser.nextMessage()
            if followsHelloReply, case .helloReply(let reply)? = message {
                parser.supportedVersions = reply.version...reply.version
            }
            return message
        } catch {
            failed = true
            throw error
        }
    }
}

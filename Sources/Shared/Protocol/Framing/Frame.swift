import NIOCore

/// A header and its complete payload (protocol.md §3).
public struct Frame: Sendable, Hashable {
    public var header: FrameHeader
    public var payload: ByteBuffer

    public init(header: FrameHeader, payload: ByteBuffer) {
        self.header = header
        self.payload = payload
    }
}

public import NIOCore

/// One encoded access unit (H.264, length-prefixed) or Opus packet, ready to become a
/// protocol `Sample` once it gets its sequence number. Times are CLOCK_MONOTONIC ns.
public struct EncodedSample: Sendable, Equatable {
    public var track: UInt8
    public var pts: Int64
    public var dts: Int64
    public var duration: Int64
    public var isKeyframe: Bool
    /// Stored as a ByteBuffer so that resending after a reconnect never copies it.
    public var data: ByteBuffer

    public init(track: UInt8, pts: Int64, dts: Int64, duration: Int64, isKeyframe: Bool, data: ByteBuffer) {
        self.track = track
        self.pts = pts
        self.dts = dts
        self.duration = duration
        self.isKeyframe = isKeyframe
        self.data = data
    }

    public init(track: UInt8, pts: Int64, dts: Int64, duration: Int64, isKeyframe: Bool, bytes: [UInt8]) {
        self.init(track: track, pts: pts, dts: dts, duration: duration, isKeyframe: isKeyframe, data: ByteBuffer(bytes: bytes))
    }
}

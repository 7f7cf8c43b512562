import NIOCore

/// Agent → server: one encoded access unit / packet of a track (protocol.md §6.12).
///
/// Fixed 34-byte header, then the sample data up to the end of the payload.
/// H.264 data is in length-prefixed form (4-byte big-endian NAL lengths, as in MP4);
/// Opus data is one Opus packet.
public struct Sample: Sendable, Hashable {
    public var track: UInt8
    public var flags: Flags
    /// Per session, across all tracks: starts at 1 and increases by exactly 1 per sample.
    public var sequence: UInt64
    /// Presentation and decode time, nanoseconds of the agent's monotonic clock.
    public var pts: Int64
    public var dts: Int64
    /// Nanoseconds, ≥ 0 (0 = unknown).
    public var duration: Int64
    public var data: ByteBuffer

    public init(track: UInt8, flags: Flags = [], sequence: UInt64, pts: Int64, dts: Int64, duration: Int64, data: ByteBuffer) {
        self.track = track
        self.flags = flags
        self.sequence = sequence
        self.pts = pts
        self.dts = dts
        self.duration = duration
        self.data = data
    }

    /// Bytes in front of the sample data.
    public static let headerSize = 34

    public struct Flags: OptionSet, Sendable, Hashable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }

        /// A sync sample (H.264 IDR); every Opus packet is a sync sample too.
        public static let keyframe = Flags(rawValue: 1 << 0)
        /// Samples of this track were dropped right before this one (see ``DropReport``).
        public static let discontinuity = Flags(rawValue: 1 << 1)

        public static let defined: Flags = [.keyframe, .discontinuity]
    }
}

extension ByteBuffer {
    mutating func readSample() throws(ProtocolError) -> Sample {
        let track = try readWire("Sample.track", as: UInt8.self)
        let rawFlags = try readWire("Sample.flags", as: UInt8.self)
        guard rawFlags & ~Sample.Flags.defined.rawValue == 0 else {
            throw ProtocolError(.reservedBitsSet, "sample flags 0x\(String(rawFlags, radix: 16)) set reserved bits")
        }
        let sequence = try readWire("Sample.sequence", as: UInt64.self)
        guard sequence >= 1 else { throw .invalid("Sample.sequence", "sequence numbers start at 1") }
        let pts = try readWire("Sample.pts", as: Int64.self)
        let dts = try readWire("Sample.dts", as: Int64.self)
        let duration = try readWire("Sample.duration", as: Int64.self)
        guard duration >= 0 else { throw .invalid("Sample.duration", "\(duration) is negative") }
        let data = readSlice(length: readableBytes)!
        return Sample(track: track, flags: Sample.Flags(rawValue: rawFlags), sequence: sequence, pts: pts, dts: dts, duration: duration, data: data)
    }

    mutating func writeSample(_ sample: Sample) {
        writeInteger(sample.track)
        writeInteger(sample.flags.rawValue)
        writeInteger(sample.sequence)
        writeInteger(sample.pts)
        writeInteger(sample.dts)
        writeInteger(sample.duration)
        writeImmutableBuffer(sample.data)
    }
}

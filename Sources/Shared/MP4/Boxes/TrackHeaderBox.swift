/// `tkhd` (§8.3.2): track id, duration in the movie timescale, display size and rotation matrix.
public struct TrackHeaderBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "tkhd"
    /// enabled | in_movie
    public var flags: UInt32 = 0x3
    public var creationTime: UInt64
    public var modificationTime: UInt64
    public var trackID: UInt32
    public var duration: UInt64
    public var alternateGroup: Int16
    public var volume: Int16
    public var matrix: TransformMatrix
    /// Unrotated picture size in 16.16 fixed point (0 for audio).
    public var width: UInt32
    public var height: UInt32

    public init(trackID: UInt32, creationTime: UInt64, duration: UInt64, isAudio: Bool, width: Int, height: Int, matrix: TransformMatrix) {
        self.creationTime = creationTime
        modificationTime = creationTime
        self.trackID = trackID
        self.duration = duration
        alternateGroup = isAudio ? 1 : 0
        volume = isAudio ? 0x0100 : 0
        self.matrix = matrix
        self.width = UInt32(width) << 16
        self.height = UInt32(height) << 16
    }

    var version: UInt8 { max(creationTime, modificationTime, duration) > UInt64(UInt32.max) ? 1 : 0 }
    public var payloadSize: Int { version == 1 ? 96 : 84 }

    public func encodePayload(into w: inout ByteWriter) {
        w.fullBoxHeader(version: version, flags: flags)
        if version == 1 {
            w.u64(creationTime); w.u64(modificationTime); w.u32(trackID); w.u32(0); w.u64(duration)
        } else {
            w.u32(UInt32(creationTime)); w.u32(UInt32(modificationTime)); w.u32(trackID); w.u32(0); w.u32(UInt32(duration))
        }
        w.zeros(8)
        w.i16(0) // layer
        w.i16(alternateGroup)
        w.i16(volume)
        w.u16(0)
        matrix.encode(into: &w)
        w.u32(width)
        w.u32(height)
    }

    public init(payload r: inout ByteReader) throws(MP4ParseError) {
        let (version, flags) = try r.fullBoxHeader()
        self.flags = flags
        if version == 1 {
            creationTime = try r.u64(); modificationTime = try r.u64(); trackID = try r.u32(); try r.skip(4); duration = try r.u64()
        } else {
            creationTime = UInt64(try r.u32()); modificationTime = UInt64(try r.u32()); trackID = try r.u32()
            try r.skip(4); duration = UInt64(try r.u32())
        }
        try r.skip(10)
        alternateGroup = try r.i16()
        volume = try r.i16()
        try r.skip(2)
        matrix = try TransformMatrix.decode(&r)
        width = try r.u32("width")
        height = try r.u32("height")
    }
}

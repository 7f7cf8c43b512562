/// `mvhd` (§8.2.2). Version 1 (64-bit times) is chosen automatically when a value overflows 32 bits.
public struct MovieHeaderBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "mvhd"
    public var creationTime: UInt64
    public var modificationTime: UInt64
    public var timescale: UInt32
    public var duration: UInt64
    public var matrix: TransformMatrix
    public var nextTrackID: UInt32

    public init(creationTime: UInt64, timescale: UInt32, duration: UInt64, nextTrackID: UInt32) {
        self.creationTime = creationTime
        modificationTime = creationTime
        self.timescale = timescale
        self.duration = duration
        matrix = .identity
        self.nextTrackID = nextTrackID
    }

    var version: UInt8 { max(creationTime, modificationTime, duration) > UInt64(UInt32.max) ? 1 : 0 }
    public var payloadSize: Int { version == 1 ? 112 : 100 }

    public func encodePayload(into w: inout ByteWriter) {
        w.fullBoxHeader(version: version, flags: 0)
        if version == 1 {
            w.u64(creationTime); w.u64(modificationTime); w.u32(timescale); w.u64(duration)
        } else {
            w.u32(UInt32(creationTime)); w.u32(UInt32(modificationTime)); w.u32(timescale); w.u32(UInt32(duration))
        }
        w.u32(0x0001_0000) // rate 1.0
        w.u16(0x0100) // volume 1.0
        w.zeros(10)
        matrix.encode(into: &w)
        w.zeros(24) // pre_defined
        w.u32(nextTrackID)
    }

    public init(payload r: inout ByteReader) throws(MP4ParseError) {
        let (version, _) = try r.fullBoxHeader()
        if version == 1 {
            creationTime = try r.u64(); modificationTime = try r.u64(); timescale = try r.u32(); duration = try r.u64()
        } else {
            creationTime = UInt64(try r.u32()); modificationTime = UInt64(try r.u32())
            timescale = try r.u32(); duration = UInt64(try r.u32())
        }
        try r.skip(16)
        matrix = try TransformMatrix.decode(&r)
        try r.skip(24)
        nextTrackID = try r.u32("next_track_ID")
    }
}

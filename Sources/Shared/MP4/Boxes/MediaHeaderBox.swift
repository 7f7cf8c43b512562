/// `mdhd` (§8.4.2): the media timescale (90000 for video, 48000 for Opus) and media duration.
public struct MediaHeaderBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "mdhd"
    public var creationTime: UInt64
    public var modificationTime: UInt64
    public var timescale: UInt32
    public var duration: UInt64
    /// ISO-639-2/T code packed as three 5-bit letters; "und" by default.
    public var language: UInt16 = 0x55C4

    public init(creationTime: UInt64, timescale: UInt32, duration: UInt64) {
        self.creationTime = creationTime
        modificationTime = creationTime
        self.timescale = timescale
        self.duration = duration
    }

    var version: UInt8 { max(creationTime, modificationTime, duration) > UInt64(UInt32.max) ? 1 : 0 }
    public var payloadSize: Int { version == 1 ? 36 : 24 }

    public func encodePayload(into w: inout ByteWriter) {
        w.fullBoxHeader(version: version, flags: 0)
        if version == 1 {
            w.u64(creationTime); w.u64(modificationTime); w.u32(timescale); w.u64(duration)
        } else {
            w.u32(UInt32(creationTime)); w.u32(UInt32(modificationTime)); w.u32(timescale); w.u32(UInt32(duration))
        }
        w.u16(language)
        w.u16(0)
    }

    public init(payload r: inout ByteReader) throws(MP4ParseError) {
        let (version, _) = try r.fullBoxHeader()
        if version == 1 {
            creationTime = try r.u64(); modificationTime = try r.u64(); timescale = try r.u32(); duration = try r.u64()
        } else {
            creationTime = UInt64(try r.u32()); modificationTime = UInt64(try r.u32())
            timescale = try r.u32(); duration = UInt64(try r.u32())
        }
        language = try r.u16("language")
        try r.skip(2)
    }
}

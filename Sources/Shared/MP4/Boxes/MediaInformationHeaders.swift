/// `vmhd` (§12.1.2): flags must be 1.
public struct VideoMediaHeaderBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "vmhd"
    public init() {}
    public var payloadSize: Int { 12 }
    public func encodePayload(into w: inout ByteWriter) {
        w.fullBoxHeader(version: 0, flags: 1)
        w.zeros(8) // graphicsmode + opcolor
    }
    public init(payload r: inout ByteReader) throws(MP4ParseError) { try r.skip(12, "vmhd") }
}

/// `smhd` (§12.2.2): balance 0.
public struct SoundMediaHeaderBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "smhd"
    public init() {}
    public var payloadSize: Int { 8 }
    public func encodePayload(into w: inout ByteWriter) {
        w.fullBoxHeader(version: 0, flags: 0)
        w.zeros(4)
    }
    public init(payload r: inout ByteReader) throws(MP4ParseError) { try r.skip(8, "smhd") }
}

/// `dinf` + `dref` + `url ` (§8.7.1–2): one self-contained data reference (flags 1 = "in this file").
public struct DataInformationBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "dinf"
    public init() {}
    // dref: header 8 + fullbox 4 + entry_count 4 + url box (8 + 4)
    public var payloadSize: Int { 28 }
    public func encodePayload(into w: inout ByteWriter) {
        w.u32(28); w.fourCC("dref")
        w.fullBoxHeader(version: 0, flags: 0)
        w.u32(1)
        w.u32(12); w.fourCC("url ")
        w.fullBoxHeader(version: 0, flags: 1)
    }
    public init(payload r: inout ByteReader) throws(MP4ParseError) { _ = r.rest() }
}

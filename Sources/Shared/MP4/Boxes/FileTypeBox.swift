/// `ftyp` (§4.3): brands that tell a reader which rules the file follows.
public struct FileTypeBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "ftyp"
    public var majorBrand: FourCC
    public var minorVersion: UInt32
    public var compatibleBrands: [FourCC]

    public init(majorBrand: FourCC, minorVersion: UInt32, compatibleBrands: [FourCC]) {
        self.majorBrand = majorBrand
        self.minorVersion = minorVersion
        self.compatibleBrands = compatibleBrands
    }

    /// While recording: fragmented, with default-base-is-moof, which readers honour under `iso5`.
    public static let fragmented = FileTypeBox(majorBrand: "iso5", minorVersion: 512, compatibleBrands: ["iso5", "iso6", "avc1", "mp41"])
    /// Once finalized: a regular progressive MP4, as ffmpeg brands one. Same size as `fragmented`,
    /// so finalizing rewrites it in place.
    public static let progressive = FileTypeBox(majorBrand: "isom", minorVersion: 512, compatibleBrands: ["isom", "iso2", "avc1", "mp41"])

    public var payloadSize: Int { 8 + 4 * compatibleBrands.count }

    public func encodePayload(into w: inout ByteWriter) {
        w.fourCC(majorBrand)
        w.u32(minorVersion)
        compatibleBrands.forEach { w.fourCC($0) }
    }

    public init(payload r: inout ByteReader) throws(MP4ParseError) {
        majorBrand = try r.fourCC("major_brand")
        minorVersion = try r.u32("minor_version")
        compatibleBrands = []
        while r.remaining >= 4 { compatibleBrands.append(try r.fourCC("compatible_brand")) }
    }
}

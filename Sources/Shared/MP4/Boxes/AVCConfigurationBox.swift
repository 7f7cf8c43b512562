/// `avcC`: the AVCDecoderConfigurationRecord (ISO/IEC 14496-15 §5.3.3.1). Parameter sets
/// live here, not in samples. NAL lengths in samples are 4 bytes (lengthSizeMinusOne = 3).
public struct AVCConfigurationBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "avcC"
    public var profile: UInt8
    public var profileCompatibility: UInt8
    public var level: UInt8
    public var sequenceParameterSets: [[UInt8]]
    public var pictureParameterSets: [[UInt8]]
    /// chroma_format_idc, bit_depth_luma_minus8, bit_depth_chroma_minus8; present for the
    /// High profiles (100, 110, 122, 144), absent in older files (readers must tolerate both).
    public var highProfileExtension: (chromaFormat: UInt8, lumaDepthMinus8: UInt8, chromaDepthMinus8: UInt8)?

    public init(sps: [UInt8], pps: [UInt8], info: H264SequenceParameterSet) {
        profile = info.profileIDC
        profileCompatibility = info.constraintFlags
        level = info.levelIDC
        sequenceParameterSets = [sps]
        pictureParameterSets = [pps]
        if AVCConfigurationBox.profilesWithExtension.contains(info.profileIDC) {
            highProfileExtension = (UInt8(info.chromaFormatIDC), UInt8(info.bitDepthLumaMinus8), UInt8(info.bitDepthChromaMinus8))
        }
    }

    static let profilesWithExtension: Set<UInt8> = [100, 110, 122, 144]

    public var payloadSize: Int {
        5 + 1 + sequenceParameterSets.reduce(0) { $0 + 2 + $1.count }
            + 1 + pictureParameterSets.reduce(0) { $0 + 2 + $1.count } + (highProfileExtension == nil ? 0 : 4)
    }

    public func encodePayload(into w: inout ByteWriter) {
        w.u8(1) // configurationVersion
        w.u8(profile)
        w.u8(profileCompatibility)
        w.u8(level)
        w.u8(0xFF) // 6 reserved bits + lengthSizeMinusOne = 3
        w.u8(0xE0 | UInt8(sequenceParameterSets.count))
        for sps in sequenceParameterSets { w.u16(UInt16(sps.count)); w.append(sps) }
        w.u8(UInt8(pictureParameterSets.count))
        for pps in pictureParameterSets { w.u16(UInt16(pps.count)); w.append(pps) }
        if let ext = highProfileExtension {
            w.u8(0xFC | ext.chromaFormat)
            w.u8(0xF8 | ext.lumaDepthMinus8)
            w.u8(0xF8 | ext.chromaDepthMinus8)
            w.u8(0) // numOfSequenceParameterSetExt
        }
    }

    public init(payload r: inout ByteReader) throws(MP4ParseError) {
        guard try r.u8("configurationVersion") == 1 else { throw .unsupported("avcC configurationVersion") }
        profile = try r.u8("AVCProfileIndication")
        profileCompatibility = try r.u8("profile_compatibility")
        level = try r.u8("AVCLevelIndication")
        guard try r.u8("lengthSizeMinusOne") & 0x3 == 3 else { throw .unsupported("NAL length size other than 4") }
        let spsCount = Int(try r.u8("numOfSequenceParameterSets") & 0x1F)
        sequenceParameterSets = []
        for _ in 0..<spsCount {
            let n = Int(try r.u16("sequenceParameterSetLength"))
            sequenceParameterSets.append(try r.bytes(n, "sequenceParameterSetNALUnit"))
        }
        let ppsCount = Int(try r.u8("numOfPictureParameterSets"))
        pictureParameterSets = []
        for _ in 0..<ppsCount {
            let n = Int(try r.u16("pictureParameterSetLength"))
            pictureParameterSets.append(try r.bytes(n, "pictureParameterSetNALUnit"))
        }
        if r.remaining >= 4, AVCConfigurationBox.profilesWithExtension.contains(profile) {
            highProfileExtension = (try r.u8() & 0x3, try r.u8() & 0x7, try r.u8() & 0x7)
            _ = r.rest()
        }
    }

    public static func == (a: Self, b: Self) -> Bool {
        a.profile == b.profile && a.profileCompatibility == b.profileCompatibility && a.level == b.level
            && a.sequenceParameterSets == b.sequenceParameterSets && a.pictureParameterSets == b.pictureParameterSets
            && a.highProfileExtension.map { [$0.0, $0.1, $0.2] } == b.highProfileExtension.map { [$0.0, $0.1, $0.2] }
    }
}

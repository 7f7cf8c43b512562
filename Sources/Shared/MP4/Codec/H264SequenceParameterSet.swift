/// The fields of an H.264 sequence parameter set (ITU-T H.264 §7.3.2.1.1) that a container
/// needs: profile/level for `avcC`, and the cropped picture size for the sample entry.
public struct H264SequenceParameterSet: Equatable, Sendable {
    public var profileIDC: UInt8
    public var constraintFlags: UInt8
    public var levelIDC: UInt8
    public var chromaFormatIDC: Int = 1
    public var bitDepthLumaMinus8: Int = 0
    public var bitDepthChromaMinus8: Int = 0
    public var width: Int
    public var height: Int

    /// Parses a raw SPS NAL unit (header byte included, no start code).
    public init(nalUnit: [UInt8]) throws(MP4ParseError) {
        guard nalUnit.count >= 4, nalUnit[0] & 0x1F == 7 else { throw .invalid("not an SPS NAL unit") }
        profileIDC = nalUnit[1]
        constraintFlags = nalUnit[2]
        levelIDC = nalUnit[3]
        var bits = BitReader(rbsp: H264NALUnits.removeEmulationPrevention(Array(nalUnit[4...])))
        _ = try bits.ue() // seq_parameter_set_id
        if [100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135].contains(profileIDC) {
            chromaFormatIDC = try bits.ue()
            guard chromaFormatIDC <= 3 else { throw .invalid("SPS chroma_format_idc \(chromaFormatIDC) (0...3)") }
            if chromaFormatIDC == 3 { _ = try bits.bit() } // separate_colour_plane_flag
            bitDepthLumaMinus8 = try bits.ue()
            bitDepthChromaMinus8 = try bits.ue()
            // §7.4.2.1.1: bit depths 8...14.
            guard bitDepthLumaMinus8 <= 6, bitDepthChromaMinus8 <= 6 else {
                throw .invalid("SPS bit depth \(bitDepthLumaMinus8 + 8)/\(bitDepthChromaMinus8 + 8) (8...14)")
            }
            _ = try bits.bit() // qpprime_y_zero_transform_bypass_flag
            if try bits.bit() == 1 { // seq_scaling_matrix_present_flag
                for i in 0..<(chromaFormatIDC == 3 ? 12 : 8) where try bits.bit() == 1 {
                    try bits.skipScalingList(size: i < 6 ? 16 : 64)
                }
            }
        }
        _ = try bits.ue() // log2_max_frame_num_minus4
        let pocType = try bits.ue()
        if pocType == 0 {
            _ = try bits.ue()
        } else if pocType == 1 {
            _ = try bits.bit()
            _ = try bits.se()
            _ = try bits.se()
            let cycle = try bits.ue()
            guard cycle <= 255 else { throw .invalid("SPS num_ref_frames_in_pic_order_cnt_cycle") }
            for _ in 0..<cycle { _ = try bits.se() }
        }
        _ = try bits.ue() // max_num_ref_frames
        _ = try bits.bit() // gaps_in_frame_num_value_allowed_flag
        let widthInMbs = try bits.ue() + 1
        let heightInMapUnits = try bits.ue() + 1
        let frameMbsOnly = try bits.bit()
        if frameMbsOnly == 0 { _ = try bits.bit() } // mb_adaptive_frame_field_flag
        _ = try bits.bit() // direct_8x8_inference_flag
        var crop = (left: 0, right: 0, top: 0, bottom: 0)
        if try bits.bit() == 1 {
            crop = (try bits.ue(), try bits.ue(), try bits.ue(), try bits.ue())
        }
        // Crop units depend on chroma subsampling (Table 6-1) and field coding.
        let subWidth = chromaFormatIDC == 1 || chromaFormatIDC == 2 ? 2 : 1
        let subHeight = chromaFormatIDC == 1 ? 2 : 1
        let cropUnitX = chromaFormatIDC == 0 ? 1 : subWidth
        let cropUnitY = (chromaFormatIDC == 0 ? 1 : subHeight) * (2 - frameMbsOnly)
        width = widthInMbs * 16 - cropUnitX * (crop.left + crop.right)
        height = (2 - frameMbsOnly) * heightInMapUnits * 16 - cropUnitY * (crop.top + crop.bottom)
        guard width > 0, height > 0, width <= 16384, height <= 16384 else { throw .invalid("SPS picture size \(width)x\(height)") }
    }
}

/// Exp-Golomb bit reader over an RBSP (emulation prevention already removed).
struct BitReader {
    private let bytes: [UInt8]
    private var bitPosition = 0

    init(rbsp: [UInt8]) { bytes = rbsp }

    mutating func bit() throws(MP4ParseError) -> Int {
        guard bitPosition < bytes.count * 8 else { throw .truncated(field: "SPS bits", needed: 1, available: 0) }
        defer { bitPosition += 1 }
        return Int(bytes[bitPosition >> 3] >> (7 - UInt8(bitPosition & 7)) & 1)
    }

    /// ue(v), §9.1.
    mutating func ue() throws(MP4ParseError) -> Int {
        var zeros = 0
        while try bit() == 0 {
            zeros += 1
            guard zeros < 32 else { throw .invalid("Exp-Golomb code longer than 32 bits") }
        }
        var value = 0
        for _ in 0..<zeros { value = value << 1 | (try bit()) }
        return (1 << zeros) - 1 + value
    }

    /// se(v), §9.1.1.
    mutating func se() throws(MP4ParseError) -> Int {
        let k = try ue()
        return k & 1 == 1 ? (k + 1) / 2 : -(k / 2)
    }

    /// scaling_list(), §7.3.2.1.1.1: only skipped, the values do not matter to a container.
    mutating func skipScalingList(size: Int) throws(MP4ParseError) {
        var last = 8
        var next = 8
        for _ in 0..<size where next != 0 {
            next = (last + (try se()) + 256) % 256
            if next != 0 { last = next }
        }
    }
}

/// The Opus identification header (RFC 7845 §5.1), little-endian, as libopus users produce it.
public struct OpusHead: Equatable, Sendable {
    public var channelCount: UInt8
    public var preSkip: UInt16
    public var inputSampleRate: UInt32
    public var outputGain: Int16
    public var channelMappingFamily: UInt8
    public var channelMappingTable: [UInt8]

    public init(channelCount: UInt8, preSkip: UInt16, inputSampleRate: UInt32 = 48000, outputGain: Int16 = 0,
                channelMappingFamily: UInt8 = 0, channelMappingTable: [UInt8] = []) {
        self.channelCount = channelCount
        self.preSkip = preSkip
        self.inputSampleRate = inputSampleRate
        self.outputGain = outputGain
        self.channelMappingFamily = channelMappingFamily
        self.channelMappingTable = channelMappingTable
    }

    /// The packet as RFC 7845 §5.1 lays it out (version 1), the inverse of ``init(bytes:)``.
    public var bytes: [UInt8] {
        var b = Array("OpusHead".utf8) + [1, channelCount, UInt8(truncatingIfNeeded: preSkip), UInt8(preSkip >> 8)]
        b += (0..<4).map { UInt8(truncatingIfNeeded: inputSampleRate >> (8 * $0)) }
        b += [UInt8(truncatingIfNeeded: UInt16(bitPattern: outputGain)), UInt8(UInt16(bitPattern: outputGain) >> 8), channelMappingFamily]
        return b + channelMappingTable
    }

    /// Parses the 19+ byte packet starting with "OpusHead".
    public init(bytes b: [UInt8]) throws(MP4ParseError) {
        guard b.count >= 19, Array(b[0..<8]) == Array("OpusHead".utf8) else { throw .invalid("not an OpusHead packet") }
        guard b[8] & 0xF0 == 0 else { throw .unsupported("OpusHead major version \(b[8] >> 4)") }
        channelCount = b[9]
        guard channelCount > 0 else { throw .invalid("OpusHead with 0 channels") }
        preSkip = UInt16(b[10]) | UInt16(b[11]) << 8
        inputSampleRate = UInt32(b[12]) | UInt32(b[13]) << 8 | UInt32(b[14]) << 16 | UInt32(b[15]) << 24
        outputGain = Int16(bitPattern: UInt16(b[16]) | UInt16(b[17]) << 8)
        channelMappingFamily = b[18]
        if channelMappingFamily == 0 {
            guard channelCount <= 2 else { throw .invalid("mapping family 0 allows 1 or 2 channels") }
            channelMappingTable = []
        } else {
            let needed = 2 + Int(channelCount)
            guard b.count >= 19 + needed else { throw .truncated(field: "OpusHead channel mapping", needed: needed, available: b.count - 19) }
            channelMappingTable = Array(b[19..<19 + needed])
        }
    }
}

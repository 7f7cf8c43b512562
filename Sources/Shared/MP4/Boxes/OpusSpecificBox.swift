/// `dOps` ("Encapsulation of Opus in ISO Base Media File Format" §4.3.2): OpusHead's fields,
/// big-endian, without the magic and with version 0. A plain box: no version/flags.
public struct OpusSpecificBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "dOps"
    public var outputChannelCount: UInt8
    public var preSkip: UInt16
    public var inputSampleRate: UInt32
    public var outputGain: Int16
    public var channelMappingFamily: UInt8
    /// stream_count, coupled_count, channel_mapping[] — only when the family is not 0.
    public var channelMappingTable: [UInt8]

    public init(head: OpusHead) {
        outputChannelCount = head.channelCount
        preSkip = head.preSkip
        inputSampleRate = head.inputSampleRate
        outputGain = head.outputGain
        channelMappingFamily = head.channelMappingFamily
        channelMappingTable = head.channelMappingTable
    }

    public var payloadSize: Int { 11 + channelMappingTable.count }

    public func encodePayload(into w: inout ByteWriter) {
        w.u8(0)
        w.u8(outputChannelCount)
        w.u16(preSkip)
        w.u32(inputSampleRate)
        w.i16(outputGain)
        w.u8(channelMappingFamily)
        w.append(channelMappingTable)
    }

    public init(payload r: inout ByteReader) throws(MP4ParseError) {
        guard try r.u8("dOps Version") == 0 else { throw .unsupported("dOps version") }
        outputChannelCount = try r.u8("OutputChannelCount")
        preSkip = try r.u16("PreSkip")
        inputSampleRate = try r.u32("InputSampleRate")
        outputGain = try r.i16("OutputGain")
        channelMappingFamily = try r.u8("ChannelMappingFamily")
        if channelMappingFamily == 0 {
            channelMappingTable = []
        } else {
            // StreamCount, CoupledCount, then one mapping byte per output channel.
            channelMappingTable = try r.bytes(2 + Int(outputChannelCount), "ChannelMapping table")
        }
    }
}

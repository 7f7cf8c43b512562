/// `avc1` visual sample entry (§12.1.3 + ISO/IEC 14496-15 §5.4.2) carrying `avcC`.
public struct AVCSampleEntry: DecodableBox, Equatable {
    public static let boxType: FourCC = "avc1"
    public var width: UInt16
    public var height: UInt16
    public var configuration: AVCConfigurationBox

    public init(width: Int, height: Int, configuration: AVCConfigurationBox) {
        self.width = UInt16(width)
        self.height = UInt16(height)
        self.configuration = configuration
    }

    public var payloadSize: Int { 78 + configuration.size }

    public func encodePayload(into w: inout ByteWriter) {
        w.zeros(6)
        w.u16(1) // data_reference_index
        w.zeros(16) // pre_defined + reserved
        w.u16(width)
        w.u16(height)
        w.u32(0x0048_0000) // 72 dpi
        w.u32(0x0048_0000)
        w.u32(0)
        w.u16(1) // frame_count
        w.zeros(32) // compressorname
        w.u16(0x0018) // depth
        w.i16(-1)
        configuration.encode(into: &w)
    }

    public init(payload r: inout ByteReader) throws(MP4ParseError) {
        try r.skip(24)
        width = try r.u16("width")
        height = try r.u16("height")
        try r.skip(50)
        let children = try r.childBoxes()
        configuration = try requireChild(AVCConfigurationBox.self, in: children, parent: "avc1")
    }
}

/// `Opus` audio sample entry (Opus-in-ISOBMFF §4.3.1): capital O; samplerate fixed at 48000.
public struct OpusSampleEntry: DecodableBox, Equatable {
    public static let boxType: FourCC = "Opus"
    public var channelCount: UInt16
    public var specific: OpusSpecificBox

    public init(specific: OpusSpecificBox) {
        channelCount = UInt16(specific.outputChannelCount)
        self.specific = specific
    }

    public var payloadSize: Int { 28 + specific.size }

    public func encodePayload(into w: inout ByteWriter) {
        w.zeros(6)
        w.u16(1) // data_reference_index
        w.zeros(8)
        w.u16(channelCount)
        w.u16(16) // samplesize
        w.u16(0)
        w.u16(0)
        w.u32(48000 << 16)
        specific.encode(into: &w)
    }

    public init(payload r: inout ByteReader) throws(MP4ParseError) {
        try r.skip(16)
        channelCount = try r.u16("channelcount")
        try r.skip(10)
        let children = try r.childBoxes()
        specific = try requireChild(OpusSpecificBox.self, in: children, parent: "Opus")
    }
}

/// One entry of `stsd`: the codecs we write, or an opaque entry we only read past.
public enum SampleEntry: Equatable, Sendable {
    case avc(AVCSampleEntry)
    case opus(OpusSampleEntry)
    case other(FourCC)

    var box: (any MP4Box)? {
        switch self {
        case let .avc(e): e
        case let .opus(e): e
        case .other: nil
        }
    }
}

/// `stsd` (§8.5.2): exactly one sample entry per track in our files.
public struct SampleDescriptionBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "stsd"
    public var entries: [SampleEntry]

    public init(entries: [SampleEntry]) { self.entries = entries }

    public var payloadSize: Int { 8 + entries.compactMap(\.box).totalSize }

    public func encodePayload(into w: inout ByteWriter) {
        w.fullBoxHeader(version: 0, flags: 0)
        let boxes = entries.compactMap(\.box)
        w.u32(UInt32(boxes.count))
        boxes.encodeAll(into: &w)
    }

    public init(payload r: inout ByteReader) throws(MP4ParseError) {
        _ = try r.fullBoxHeader()
        let count = try r.readCount("stsd entries", entrySize: 8)
        entries = []
        for _ in 0..<count {
            var (header, payload) = try r.nextBox()
            switch header.type {
            case AVCSampleEntry.boxType: entries.append(.avc(try AVCSampleEntry(payload: &payload)))
            case OpusSampleEntry.boxType: entries.append(.opus(try OpusSampleEntry(payload: &payload)))
            default: entries.append(.other(header.type))
            }
        }
    }
}

import NIOCore

/// Describes one track of a session (protocol.md §6.6.1).
public struct TrackDescriptor: Sendable, Hashable {
    /// Unique within the session; samples refer to it.
    public var id: UInt8
    /// The source, e.g. "cam0" or "USB mic" (UTF-8, ≤ maxStringBytes).
    public var label: String
    /// Suggested media timescale for the recording; 0 = none.
    public var timescale: UInt32
    public var format: MediaFormat

    public init(id: UInt8, label: String, timescale: UInt32 = 0, format: MediaFormat) {
        self.id = id
        self.label = label
        self.timescale = timescale
        self.format = format
    }

    public var kind: TrackKind { format.kind }
    public var codec: Codec { format.codec }
}

public enum TrackKind: UInt8, Sendable, Hashable {
    case video = 1
    case audio = 2
}

public enum Codec: UInt8, Sendable, Hashable {
    case h264 = 1
    case opus = 2
}

/// Display rotation in degrees clockwise.
public enum Rotation: UInt16, Sendable, Hashable {
    case none = 0, quarter = 90, half = 180, threeQuarters = 270
}

/// Codec and codec-specific parameters; the kind follows from the codec.
public enum MediaFormat: Sendable, Hashable {
    case h264(H264Format)
    case opus(OpusFormat)

    public var kind: TrackKind {
        switch self {
        case .h264: .video
        case .opus: .audio
        }
    }

    public var codec: Codec {
        switch self {
        case .h264: .h264
        case .opus: .opus
        }
    }
}

/// H.264 video. Parameter sets are raw NAL units without start codes or length
/// prefixes (the first byte is the NAL header: type 7 for SPS, 8 for PPS).
public struct H264Format: Sendable, Hashable {
    public var width: UInt16
    public var height: UInt16
    public var rotation: Rotation
    public var sequenceParameterSets: [[UInt8]]
    public var pictureParameterSets: [[UInt8]]

    public init(width: UInt16, height: UInt16, rotation: Rotation = .none, sequenceParameterSets: [[UInt8]], pictureParameterSets: [[UInt8]]) {
        self.width = width
        self.height = height
        self.rotation = rotation
        self.sequenceParameterSets = sequenceParameterSets
        self.pictureParameterSets = pictureParameterSets
    }
}

/// Opus audio. `opusHead` is the identification header of RFC 7845 §5.1
/// ("OpusHead", version, channel count, …), at least 19 bytes.
public struct OpusFormat: Sendable, Hashable {
    public var sampleRate: UInt32
    public var channels: UInt8
    public var opusHead: [UInt8]

    public init(sampleRate: UInt32, channels: UInt8, opusHead: [UInt8]) {
        self.sampleRate = sampleRate
        self.channels = channels
        self.opusHead = opusHead
    }
}

extension ByteBuffer {
    mutating func readTrackDescriptor(limits: ProtocolLimits) throws(ProtocolError) -> TrackDescriptor {
        let id = try readWire("Track.id", as: UInt8.self)
        let rawKind = try readWire("Track.kind", as: UInt8.self)
        let rawCodec = try readWire("Track.codec", as: UInt8.self)
        let width = try readWire("Track.width", as: UInt16.self)
        let height = try readWire("Track.height", as: UInt16.self)
        let rawRotation = try readWire("Track.rotation", as: UInt16.self)
        let sampleRate = try readWire("Track.sampleRate", as: UInt32.self)
        let channels = try readWire("Track.channels", as: UInt8.self)
        let timescale = try readWire("Track.timescale", as: UInt32.self)
        let label = try readUTF8("Track.label", max: limits.maxStringBytes)
        let configLength = Int(try readWire("Track.codecConfigLength", as: UInt32.self))
        guard configLength <= limits.maxCodecConfigBytes else {
            throw ProtocolError(.codecConfigTooLarge, "track \(id): codec configuration of \(configLength) bytes, at most \(limits.maxCodecConfigBytes)")
        }
        guard var config = readSlice(length: configLength) else { throw .truncated("Track.codecConfig") }

        guard let kind = TrackKind(rawValue: rawKind) else { throw .invalid("Track.kind", "\(rawKind) is not 1 (video) or 2 (audio)") }
        guard let codec = Codec(rawValue: rawCodec) else { throw .invalid("Track.codec", "\(rawCodec) is not 1 (H.264) or 2 (Opus)") }
        func invalid(_ why: String) -> ProtocolError {
            ProtocolError(.invalidTrackDescriptor, "track \(id): \(why)")
        }

        let format: MediaFormat
        switch (kind, codec) {
        case (.video, .h264):
            guard width > 0, height > 0 else { throw invalid("video needs a width and height") }
            guard let rotation = Rotation(rawValue: rawRotation) else { throw invalid("rotation \(rawRotation) is not 0, 90, 180 or 270") }
            guard sampleRate == 0, channels == 0 else { throw invalid("video must have sample rate and channels 0") }
            let sps = try config.readParameterSets(track: id, what: "SPS", nalType: 7, limits: limits)
            let pps = try config.readParameterSets(track: id, what: "PPS", nalType: 8, limits: limits)
            guard config.readableBytes == 0 else {
                throw ProtocolError(.invalidCodecConfig, "track \(id): \(config.readableBytes) bytes after the PPS list")
            }
            format = .h264(H264Format(width: width, height: height, rotation: rotation, sequenceParameterSets: sps, pictureParameterSets: pps))
        case (.audio, .opus):
            guard sampleRate > 0, channels > 0 else { throw invalid("audio needs a sample rate and channel count") }
            guard width == 0, height == 0, rawRotation == 0 else { throw invalid("audio must have width, height and rotation 0") }
            let head = config.readBytes(length: config.readableBytes) ?? []
            try OpusFormat.validateHead(head, channels: channels, track: id)
            format = .opus(OpusFormat(sampleRate: sampleRate, channels: channels, opusHead: head))
        default:
            throw invalid("codec \(codec) does not match kind \(kind)")
        }
        return TrackDescriptor(id: id, label: label, timescale: timescale, format: format)
    }

    /// u8 count (1...maxParameterSets), then count × (u16 length ≥ 1, NAL unit).
    private mutating func readParameterSets(track: UInt8, what: String, nalType: UInt8, limits: ProtocolLimits) throws(ProtocolError) -> [[UInt8]] {
        func invalid(_ why: String) -> ProtocolError {
            ProtocolError(.invalidCodecConfig, "track \(track): \(what) \(why)")
        }
        guard let count = readInteger(as: UInt8.self) else { throw invalid("count missing") }
        guard (1...limits.maxParameterSets).contains(Int(count)) else {
            throw invalid("count \(count) is not within 1...\(limits.maxParameterSets)")
        }
        var sets: [[UInt8]] = []
        for _ in 0..<count {
            guard let length = readInteger(as: UInt16.self) else { throw invalid("length missing") }
            guard length >= 1, readableBytes >= Int(length), let nal = readBytes(length: Int(length)) else {
                throw invalid("of \(length) bytes does not fit the configuration")
            }
            guard nal[0] & 0x1F == nalType else { throw invalid("has NAL type \(nal[0] & 0x1F), expected \(nalType)") }
            sets.append(nal)
        }
        return sets
    }

    mutating func writeTrackDescriptor(_ track: TrackDescriptor, limits: ProtocolLimits) throws(ProtocolError) {
        writeInteger(track.id)
        writeInteger(track.kind.rawValue)
        writeInteger(track.codec.rawValue)
        switch track.format {
        case .h264(let f):
            writeInteger(f.width)
            writeInteger(f.height)
            writeInteger(f.rotation.rawValue)
            writeInteger(UInt32(0))
            writeInteger(UInt8(0))
        case .opus(let f):
            writeInteger(UInt16(0))
            writeInteger(UInt16(0))
            writeInteger(UInt16(0))
            writeInteger(f.sampleRate)
            writeInteger(f.channels)
        }
        writeInteger(track.timescale)
        try writeUTF8(track.label, "Track.label", max: limits.maxStringBytes)

        let lengthIndex = writerIndex
        writeInteger(UInt32(0))
        switch track.format {
        case .h264(let f):
            try writeParameterSets(f.sequenceParameterSets, track: track.id)
            try writeParameterSets(f.pictureParameterSets, track: track.id)
        case .opus(let f):
            writeBytes(f.opusHead)
        }
        let length = writerIndex - lengthIndex - 4
        guard length <= limits.maxCodecConfigBytes else {
            throw ProtocolError(.codecConfigTooLarge, "track \(track.id): codec configuration of \(length) bytes, at most \(limits.maxCodecConfigBytes)")
        }
        setInteger(UInt32(length), at: lengthIndex)
    }

    private mutating func writeParameterSets(_ sets: [[UInt8]], track: UInt8) throws(ProtocolError) {
        guard sets.count <= Int(UInt8.max), sets.allSatisfy({ $0.count <= Int(UInt16.max) }) else {
            throw ProtocolError(.invalidCodecConfig, "track \(track): parameter sets do not fit their length fields")
        }
        writeInteger(UInt8(sets.count))
        for set in sets {
            writeInteger(UInt16(set.count))
            writeBytes(set)
        }
    }
}

extension OpusFormat {
    /// RFC 7845 §5.1: magic "OpusHead", version with major 0, channel count matching the track.
    static func validateHead(_ head: [UInt8], channels: UInt8, track: UInt8) throws(ProtocolError) {
        let magic: [UInt8] = Array("OpusHead".utf8)
        guard head.count >= 19, head.starts(with: magic) else {
            throw ProtocolError(.invalidCodecConfig, "track \(track): OpusHead must be at least 19 bytes starting with \"OpusHead\"")
        }
        guard head[8] & 0xF0 == 0 else {
            throw ProtocolError(.invalidCodecConfig, "track \(track): OpusHead version \(head[8]) is not 0.x")
        }
        guard head[9] == channels else {
            throw ProtocolError(.invalidCodecConfig, "track \(track): OpusHead has \(head[9]) channels, track says \(channels)")
        }
    }
}

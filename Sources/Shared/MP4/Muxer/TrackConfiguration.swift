/// One track of a recording: what it carries and how it is labelled.
public struct TrackConfiguration: Sendable, Equatable {
    public enum Codec: Sendable, Equatable {
        /// Raw SPS and PPS NAL units (no start code, no length prefix).
        case h264(sps: [UInt8], pps: [UInt8])
        /// The OpusHead identification header (RFC 7845 §5.1).
        case opus(OpusHead)
    }

    /// The MP4 track_ID, also the key samples are appended with. Unique, non-zero.
    public var id: UInt32
    /// Source label ("front", "back", "mic"); written as the track's handler name.
    public var label: String
    public var codec: Codec
    /// Clockwise display rotation: 0, 90, 180 or 270.
    public var rotation: Int
    /// Seconds since 1970; nil means the recording's creation time.
    public var creationTime: Int64?

    public init(id: UInt32, label: String, codec: Codec, rotation: Int = 0, creationTime: Int64? = nil) {
        self.id = id
        self.label = label
        self.codec = codec
        self.rotation = rotation
        self.creationTime = creationTime
    }

    public var isVideo: Bool { if case .h264 = codec { true } else { false } }
    /// Media timescale: 90 kHz for video, 48 kHz for Opus (mandated by the Opus mapping).
    public var timescale: UInt32 { isVideo ? 90000 : 48000 }
}

/// A validated track with everything derived from its codec configuration.
struct PreparedTrack: Sendable {
    let configuration: TrackConfiguration
    let sampleEntry: SampleEntry
    let width: Int
    let height: Int
    let sps: [UInt8]?
    let pps: [UInt8]?
    let preSkip: Int

    init(_ config: TrackConfiguration) throws(MuxerError) {
        configuration = config
        guard config.id != 0 else { throw MuxerError(.invalidConfiguration, "track id 0 is reserved") }
        guard [0, 90, 180, 270].contains(config.rotation) else {
            throw MuxerError(.invalidConfiguration, "rotation \(config.rotation) of track \(config.id) is not 0, 90, 180 or 270")
        }
        guard config.label.utf8.count <= 255 else { throw MuxerError(.invalidConfiguration, "track label longer than 255 bytes") }
        switch config.codec {
        case let .h264(sps, pps):
            let info: H264SequenceParameterSet
            do { info = try H264SequenceParameterSet(nalUnit: sps) } catch {
                throw MuxerError(.invalidConfiguration, "track \(config.id): cannot parse SPS: \(error)")
            }
            guard pps.first.map({ $0 & 0x1F }) == H264NALUnits.typePPS, sps.count <= 0xFFFF, pps.count <= 0xFFFF else {
                throw MuxerError(.invalidConfiguration, "track \(config.id): PPS is not a PPS NAL unit")
            }
            width = info.width
            height = info.height
            self.sps = sps
            self.pps = pps
            preSkip = 0
            let avcC = AVCConfigurationBox(sps: sps, pps: pps, info: info)
            sampleEntry = .avc(AVCSampleEntry(width: info.width, height: info.height, configuration: avcC))
        case let .opus(head):
            width = 0
            height = 0
            sps = nil
            pps = nil
            preSkip = Int(head.preSkip)
            sampleEntry = .opus(OpusSampleEntry(specific: OpusSpecificBox(head: head)))
        }
    }

    var id: UInt32 { configuration.id }
    var isVideo: Bool { configuration.isVideo }
    var timescale: UInt32 { configuration.timescale }
}

/// One track of a recording: what it carries and how it is labelled.
public struct TrackConfiguration: Sendable, Equatable {
    public enum Codec: Sendable, Equatable {
        /// Raw SPS and PPS NAL units (no start code, no length prefix).
        case h264(sps: [UInt8], pps: [UInt8])
        /// The OpusHead identification header (RFC 7845 §5.1).
        case opus(OpusHead)
        /// A codec a caller can name but the muxer has no ``TrackCodec`` for (AAC, until one
        /// is added): refused with ``MuxerError/Code/unsupportedCodec``, naming it, before any
        /// file exists — instead of being written as one of the codecs above.
        case unsupported(CodecName)
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
}

/// A validated track: its configuration and its codec's rules (``TrackCodec``), which every
/// codec-specific decision of the muxer and the reader asks.
struct PreparedTrack: Sendable {
    let configuration: TrackConfiguration
    let codec: any TrackCodec

    init(_ config: TrackConfiguration) throws(MuxerError) {
        configuration = config
        guard config.id != 0 else { throw MuxerError(.invalidConfiguration, "track id 0 is reserved") }
        guard [0, 90, 180, 270].contains(config.rotation) else {
            throw MuxerError(.invalidConfiguration, "rotation \(config.rotation) of track \(config.id) is not 0, 90, 180 or 270")
        }
        guard config.label.utf8.count <= 255 else { throw MuxerError(.invalidConfiguration, "track label longer than 255 bytes") }
        codec = try config.codec.rules(track: config.id)
    }

    var id: UInt32 { configuration.id }
    var kind: MediaKind { type(of: codec).kind }
    /// Pictures, as opposed to sound: only where that is what matters (the primary track a
    /// recording is cut at is a picture track), never to tell codecs apart.
    var isVideo: Bool { kind == .video }
    var timescale: UInt32 { type(of: codec).timescale }
    var syncSamples: SyncSampleRule { type(of: codec).syncSamples }
    var sampleEntry: SampleEntry { codec.sampleEntry }
    var width: Int { codec.width }
    var height: Int { codec.height }
    /// The Opus pre-skip, or another codec's priming; what the edit list skips.
    var preSkip: Int { codec.primingTicks }
}

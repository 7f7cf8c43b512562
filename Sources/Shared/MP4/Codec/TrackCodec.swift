/// A codec's name as the recorder's parts pass it between them ("h264", "opus"). Open on
/// purpose: a codec that some part has no rules for (AAC, until it is added) is still a value
/// that part can refuse by name — see ``UnsupportedCodecError`` — instead of being taken for
/// one of the codecs it knows.
public struct CodecName: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { rawValue = value }
    public var description: String { rawValue }

    public static let h264: CodecName = "h264"
    public static let opus: CodecName = "opus"
}

/// Whether a track is pictures or sound: its handler (`vide`/`soun`, §8.4.3), its media
/// header (`vmhd`/`smhd`) and its `tkhd` volume follow from it. Not a codec: two video codecs
/// share a kind, and no rule of a codec may be inferred from it.
public enum MediaKind: String, Sendable, Equatable {
    case video
    case audio

    /// The `hdlr` handler type.
    var handlerType: FourCC { self == .video ? "vide" : "soun" }
}

/// A codec that some part of the recorder has no rules for, named with the place that
/// refused it ("the muxer", "record-server's track mapping", "the agent's encoder factory").
/// Thrown (or carried as the message of the part's own error) before anything is written, so
/// a codec nobody implemented never becomes a file that only looks right.
public struct UnsupportedCodecError: Error, Sendable, Equatable, CustomStringConvertible {
    public let codec: CodecName
    public let place: String

    public init(codec: CodecName, place: String) {
        self.codec = codec
        self.place = place
    }

    public var description: String { "codec \(codec) is not supported by \(place)" }
}

/// Which samples of a track are sync samples, and so whether the track needs `stss`.
enum SyncSampleRule: Sendable {
    /// Every sample decodes on its own (Opus): no `stss`, and a track may be split anywhere.
    case everySample
    /// The bitstream marks them (H.264 IDR): `stss` lists them unless all are, and a track is
    /// split or cut only at one.
    case marked
}

/// The rules one codec brings to a track, for the muxer and the reader: its sample entry and
/// decoder configuration, which samples are sync, how a sample is stored, the priming its
/// decoder discards and the pre-roll it needs after a seek. One type per codec (``H264Codec``,
/// ``OpusCodec``), listed in ``TrackCodecs/all``; ``TrackConfiguration/Codec`` says which one
/// a track uses. Adding a codec is adding a type here (docs/architecture.md, "Where to add a
/// codec").
protocol TrackCodec: Sendable {
    static var name: CodecName { get }
    static var kind: MediaKind { get }
    /// The `stsd` entry type this codec writes and recognises (`avc1`, `Opus`).
    static var sampleEntryType: FourCC { get }
    /// Media timescale (`mdhd`), fixed by the codec's mapping.
    static var timescale: UInt32 { get }
    static var syncSamples: SyncSampleRule { get }
    /// The duration given to a fragment's last sample when neither the sample nor the track
    /// so far says (one 30 fps frame, one 20 ms packet).
    static var nominalSampleTicks: Int64 { get }

    /// The track configuration a sample entry of ours describes, for the reader; nil for an
    /// entry of another codec, an error for ours without what the muxer needs.
    static func configuration(from entry: SampleEntry) throws(MuxerError) -> TrackConfiguration.Codec?

    /// The `stsd` entry, with the decoder configuration box inside (`avcC`, `dOps`).
    var sampleEntry: SampleEntry { get }
    /// Presentation size for `tkhd` and the rotation matrix; 0 × 0 for sound.
    var width: Int { get }
    var height: Int { get }
    /// Media ticks the decoder outputs before the first real sample (Opus pre-skip), which
    /// the edit list skips; 0 when there are none.
    var primingTicks: Int { get }
    /// The stored form of one sample and whether it is a sync sample. Pure; throws for a
    /// sample this codec cannot store.
    func prepare(_ sample: MuxerSample, track: UInt32) throws(MuxerError) -> (payload: [UInt8], isSync: Bool)
    /// The `roll` sample group a decoder needs after a seek (§10.1), or nil for none.
    func rollGroup(for table: TrackTable) -> (description: RollGroupDescriptionBox, mapping: SampleToGroupBox)?
}

/// Every codec the muxer writes and the reader recognises.
enum TrackCodecs {
    static let all: [any TrackCodec.Type] = [H264Codec.self, OpusCodec.self]

    /// The codec whose sample entry `entry` is, if it is one of ours.
    static func writing(_ entry: SampleEntry) -> (any TrackCodec.Type)? {
        let entryType: FourCC = switch entry {
        case .avc: AVCSampleEntry.boxType
        case .opus: OpusSampleEntry.boxType
        case let .other(fourCC): fourCC
        }
        return all.first { $0.sampleEntryType == entryType }
    }
}

extension TrackConfiguration.Codec {
    /// The rules of this codec for track `id`: its configuration checked, its sample entry
    /// built. A codec without a ``TrackCodec`` is refused here, before any file exists.
    func rules(track id: UInt32) throws(MuxerError) -> any TrackCodec {
        switch self {
        case let .h264(sps, pps): try H264Codec(sps: sps, pps: pps, track: id)
        case let .opus(head): OpusCodec(head: head)
        case let .unsupported(name):
            throw MuxerError(.unsupportedCodec, "track \(id): \(UnsupportedCodecError(codec: name, place: "the muxer"))")
        }
    }
}

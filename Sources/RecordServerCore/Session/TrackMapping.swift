import Shared

/// Maps the wire protocol's track descriptors onto muxer tracks. Protocol track ids are u8
/// and may be 0; MP4 track_IDs must be ≥ 1, so the MP4 id is the protocol id + 1.
enum TrackMapping {
    static func muxerTrackID(_ protocolID: UInt8) -> UInt32 { UInt32(protocolID) + 1 }

    /// The protocol id of a muxer track: what logs, errors and the catalog show (protocol.md
    /// §6.6.1), so an operator sees the numbers the agent used.
    static func wireTrackID(_ muxerID: UInt32) -> UInt8 { UInt8(clamping: max(muxerID, 1) - 1) }

    /// A muxer error's text with its track numbers ("track N", MP4 ids) given as protocol ids.
    static func describe(_ error: MuxerError) -> String {
        var out = ""
        var rest = Substring(error.message)
        while let range = rest.range(of: "track ") {
            out += rest[..<range.upperBound]
            rest = rest[range.upperBound...]
            let digits = rest.prefix(while: \.isNumber)
            if let id = UInt32(digits) {
                out += "\(wireTrackID(id))"
                rest = rest.dropFirst(digits.count)
            }
        }
        return "\(error.code): " + out + rest
    }

    /// The muxer track a wire track becomes. One case per wire codec, so a codec added to the
    /// protocol does not compile here until it is mapped: onto its muxer codec, or, while the
    /// muxer has none, onto `.unsupported(name)`, which ``refusal(of:)`` turns into a refused
    /// SessionOpen. Never onto another codec's rules.
    static func configuration(_ descriptor: TrackDescriptor) throws(ProtocolError) -> TrackConfiguration {
        let codec: TrackConfiguration.Codec
        var rotation = 0
        switch descriptor.format {
        case .h264(let h264):
            guard let sps = h264.sequenceParameterSets.first, let pps = h264.pictureParameterSets.first else {
                throw ProtocolError(.invalidCodecConfig, "track \(descriptor.id): no SPS or PPS")
            }
            codec = .h264(sps: sps, pps: pps)
            rotation = Int(h264.rotation.rawValue)
        case .opus(let opus):
            do { codec = .opus(try OpusHead(bytes: opus.opusHead)) } catch {
                throw ProtocolError(.invalidCodecConfig, "track \(descriptor.id): \(error)")
            }
        }
        return TrackConfiguration(id: muxerTrackID(descriptor.id), label: descriptor.label, codec: codec, rotation: rotation)
    }

    static func kind(_ descriptor: TrackDescriptor) -> (kind: String, codec: String, width: Int, height: Int) {
        switch descriptor.format {
        case .h264(let h): (MediaKind.video.rawValue, CodecName.h264.rawValue, Int(h.width), Int(h.height))
        case .opus: (MediaKind.audio.rawValue, CodecName.opus.rawValue, 0, 0)
        }
    }

    /// What a SessionOpen is answered when the muxer refuses its tracks: a codec configuration
    /// it cannot record (`invalidConfiguration`) or a codec it has no rules for
    /// (`unsupportedCodec`, named with its track) is `invalidCodecConfig` (protocol.md §6.6);
    /// nil for any other failure, which is the server's, not the track's.
    static func refusal(of error: MuxerError) -> ProtocolError? {
        switch error.code {
        case .invalidConfiguration: ProtocolError(.invalidCodecConfig, error.message)
        case .unsupportedCodec: ProtocolError(.invalidCodecConfig, describe(error))
        default: nil
        }
    }
}

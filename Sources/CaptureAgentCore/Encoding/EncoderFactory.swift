import Shared

/// Which encoder a source's codec gets. The agent encodes pictures with H.264 (x264) and
/// sound with Opus; a codec without an encoder here, or one that does not encode the
/// source's kind, is refused by name before the source streams anything.
enum EncoderFactory {
    /// The codec a source of `kind` is encoded with (the agent offers no choice yet).
    static func codec(for kind: MediaKind) -> CodecName {
        switch kind {
        case .video: .h264
        case .audio: .opus
        }
    }

    /// The encoder of `codec` for a started source of `format`, as track `track`.
    /// - Throws: ``UnsupportedCodecError`` for a codec this factory has no encoder for (for
    ///   that kind of source); ``EncoderError`` when the encoder refuses its settings.
    static func encoder(codec: CodecName, track: UInt8, format: SourceFormat,
                        video: VideoEncodingSettings, audio: AudioEncodingSettings) throws -> any SampleEncoder {
        switch (codec, format) {
        case (.h264, .video(let w, let h, let n, let d)):
            return try H264SampleEncoder(track: track, width: w, height: h, fpsNumerator: n, fpsDenominator: d, settings: video)
        case (.opus, .audio(_, let channels)):
            return try OpusSampleEncoder(track: track, channels: channels, settings: audio)
        default:
            throw UnsupportedCodecError(codec: codec, place: "the agent's encoder factory for \(format)")
        }
    }
}

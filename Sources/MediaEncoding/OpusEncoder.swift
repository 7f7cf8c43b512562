internal import COpus

/// An owning wrapper over a libopus encoder producing one packet per 20 ms frame.
///
/// Not thread-safe: use one instance from one task/thread at a time.
public final class OpusEncoder {
    /// libopus application mode.
    public enum Application: Sendable, Equatable {
        /// Speech-optimised (OPUS_APPLICATION_VOIP).
        case voip
        /// General audio (OPUS_APPLICATION_AUDIO).
        case audio
        /// Lowest delay, CELT only (OPUS_APPLICATION_RESTRICTED_LOWDELAY).
        case lowDelay
    }

    /// Largest packet `encode` can return (the size libopus recommends for the output buffer).
    public static let maxPacketSize = 4000
    /// Duration of every packet.
    public static let frameDurationMs = 20

    public let sampleRate: Int32
    public let channels: Int
    public let bitrate: Int32
    public let application: Application
    /// Samples per channel in one frame (960 at 48 kHz).
    public let frameSize: Int
    /// Encoder delay in 48 kHz samples (`OPUS_GET_LOOKAHEAD`, 312 for audio/voip, 120 for
    /// lowDelay at 48 kHz). Decoders drop this many samples at the start (Ogg/MP4 pre-skip).
    public let preSkip: Int

    private let handle: OpaquePointer

    /// Creates an encoder.
    /// - Parameters:
    ///   - sampleRate: 8000, 12000, 16000, 24000 or 48000 (libopus rejects 44100).
    ///   - channels: 1 or 2; PCM is interleaved.
    ///   - bitrate: bits per second; defaults to 64000 (mono) or 96000 (stereo).
    ///   - complexity: 0…10, CPU spent for quality; nil keeps libopus's default (10). A small
    ///     board (or an emulated CPU) that cannot encode every track in real time needs less.
    public init(sampleRate: Int32 = 48000, channels: Int = 1, bitrate: Int32? = nil, complexity: Int32? = nil,
                application: Application = .audio) throws(EncoderError) {
        guard [8000, 12000, 16000, 24000, 48000].contains(sampleRate) else {
            throw EncoderError(.invalidSettings, "unsupported sample rate \(sampleRate)")
        }
        guard channels == 1 || channels == 2 else {
            throw EncoderError(.invalidSettings, "channels must be 1 or 2, got \(channels)")
        }
        let rate = bitrate ?? (channels == 1 ? 64000 : 96000)
        guard (500...512_000).contains(rate) else {
            throw EncoderError(.invalidSettings, "bitrate out of range: \(rate)")
        }
        if let complexity, !(0...10).contains(complexity) {
            throw EncoderError(.invalidSettings, "complexity must be 0…10, got \(complexity)")
        }
        let app: Int32 = switch application {
        case .voip: copus_application_voip()
        case .audio: copus_application_audio()
        case .lowDelay: copus_application_restricted_lowdelay()
        }
        var err: Int32 = 0
        guard let h = opus_encoder_create(sampleRate, Int32(channels), app, &err), err == OPUS_OK else {
            throw EncoderError(.openFailed, "opus_encoder_create failed (\(err))")
        }
        var setResult = copus_set_bitrate(h, rate)
        if setResult == OPUS_OK, let complexity { setResult = copus_set_complexity(h, complexity) }
        var lookahead: Int32 = 0
        let getResult = copus_get_lookahead(h, &lookahead)
        guard setResult == OPUS_OK, getResult == OPUS_OK else {
            opus_encoder_destroy(h)
            throw EncoderError(.invalidSettings, "opus_encoder_ctl failed (\(setResult), \(getResult))")
        }
        self.handle = h
        self.sampleRate = sampleRate
        self.channels = channels
        self.bitrate = rate
        self.application = application
        self.frameSize = Int(sampleRate) * Self.frameDurationMs / 1000
        // RFC 7845 counts pre-skip at 48 kHz whatever the input rate.
        self.preSkip = Int(lookahead) * 48000 / Int(sampleRate)
    }

    deinit {
        opus_encoder_destroy(handle)
    }

    /// RFC 7845 §5.1 identification header ("OpusHead", version 1, channel count, pre-skip,
    /// input sample rate, output gain 0, mapping family 0): 19 bytes, little-endian.
    public var opusHead: [UInt8] {
        var head = Array("OpusHead".utf8)
        head.append(1)
        head.append(UInt8(channels))
        head.append(contentsOf: [UInt8(preSkip & 0xFF), UInt8((preSkip >> 8) & 0xFF)])
        let rate = UInt32(sampleRate)
        head.append(contentsOf: (0..<4).map { UInt8((rate >> (8 * $0)) & 0xFF) })
        head.append(contentsOf: [0, 0])
        head.append(0)
        return head
    }

    /// Encodes exactly one frame: `frameSize * channels` interleaved samples.
    /// Throws `.wrongFrameSize` for any other count, `.encodeFailed` on a libopus error.
    public func encode(_ pcm: [Int16]) throws(EncoderError) -> [UInt8] {
        guard pcm.count == frameSize * channels else {
            throw EncoderError(.wrongFrameSize, "expected \(frameSize * channels) samples (\(frameSize) x \(channels) ch), got \(pcm.count)")
        }
        var packet = [UInt8](repeating: 0, count: Self.maxPacketSize)
        let n = pcm.withUnsafeBufferPointer { input in
            packet.withUnsafeMutableBufferPointer { out in
                opus_encode(handle, input.baseAddress!, Int32(frameSize), out.baseAddress!, Int32(out.count))
            }
        }
        guard n > 0 else { throw EncoderError(.encodeFailed(n), "opus_encode failed (\(n))") }
        packet.removeSubrange(Int(n)...)
        return packet
    }

    /// Resets the codec state (as after creation), e.g. after a gap in the input.
    public func reset() {
        _ = copus_encoder_reset(handle)
    }
}

import MediaEncoding
import NIOCore
import WireProtocol

/// Turns captured media of one track into encoded samples. One instance per track,
/// used from that track's encoder thread only.
protocol SampleEncoder: AnyObject {
    /// The codec part of the track descriptor (H.264 parameter sets, OpusHead).
    var mediaFormat: MediaFormat { get }
    /// Suggested media timescale for the recording.
    var timescale: UInt32 { get }
    func encode(_ media: CapturedMedia) throws(EncoderError) -> [EncodedSample]
    /// Drains what the encoder still holds (end of stream).
    func flush() throws(EncoderError) -> [EncodedSample]
    /// Input units were lost right before the next one.
    func inputDiscontinuity()
    /// The next picture should be a keyframe (after samples were dropped downstream).
    func requestKeyframe()
}

/// x264 settings chosen by the operator; size and rate come from the source.
public struct VideoEncodingSettings: Sendable, Equatable {
    public var preset: String
    public var tune: String?
    /// CRF when `bitrateKbps` is nil.
    public var crf: Double
    var bitrateKbps: Int?
    /// Keyframe interval in frames; nil = two seconds' worth.
    public var keyframeInterval: Int?
    public var threads: Int
    public var profile: String?

    public init(preset: String = "veryfast", tune: String? = "zerolatency", crf: Double = 23, bitrateKbps: Int? = nil,
                keyframeInterval: Int? = nil, threads: Int = 0, profile: String? = nil) {
        self.preset = preset
        self.tune = tune
        self.crf = crf
        self.bitrateKbps = bitrateKbps
        self.keyframeInterval = keyframeInterval
        self.threads = threads
        self.profile = profile
    }
}

/// Opus settings chosen by the operator.
public struct AudioEncodingSettings: Sendable, Equatable {
    /// bits per second; nil = 64000 mono / 96000 stereo.
    var bitrate: Int?
    /// "audio", "voip" or "lowdelay".
    var application: String
    /// Opus complexity 0…10; nil = libopus's default, 10.
    var complexity: Int?

    public init(bitrate: Int? = nil, application: String = "audio", complexity: Int? = nil) {
        self.bitrate = bitrate
        self.application = application
        self.complexity = complexity
    }

    var opusApplication: OpusEncoder.Application? {
        switch application {
        case "audio": .audio
        case "voip": .voip
        case "lowdelay", "restricted-lowdelay": .lowDelay
        default: nil
        }
    }
}

/// H.264 through ``H264Encoder`` in length-prefixed form (protocol.md §6.12), SPS/PPS
/// also repeated in-band before keyframes so that any keyframe starts a decodable stream.
final class H264SampleEncoder: SampleEncoder {
    let track: UInt8
    private let encoder: H264Encoder
    private let frameDuration: Int64
    private var keyframeRequested = false

    init(track: UInt8, width: Int, height: Int, fpsNumerator: Int, fpsDenominator: Int, settings s: VideoEncodingSettings) throws(EncoderError) {
        self.track = track
        let fps = max(1, Int((Double(fpsNumerator) / Double(max(1, fpsDenominator))).rounded()))
        encoder = try H264Encoder(settings: .init(
            width: width, height: height, fps: fps, preset: s.preset, tune: s.tune,
            rateControl: s.bitrateKbps.map { .bitrate(kbps: $0) } ?? .crf(s.crf),
            keyframeInterval: s.keyframeInterval, bFrames: 0, threads: s.threads, profile: s.profile,
            annexB: false, repeatHeaders: true))
        frameDuration = nanoseconds(count: 1, numerator: Int64(max(1, fpsNumerator)), denominator: Int64(max(1, fpsDenominator)))
    }

    var mediaFormat: MediaFormat {
        .h264(H264Format(
            width: UInt16(encoder.settings.width), height: UInt16(encoder.settings.height),
            sequenceParameterSets: [encoder.sps], pictureParameterSets: [encoder.pps]))
    }

    var timescale: UInt32 { 90000 }

    func encode(_ media: CapturedMedia) throws(EncoderError) -> [EncodedSample] {
        guard case .video(let frame, let pts) = media else {
            throw EncoderError(.wrongFrameSize, "track \(track): audio given to the video encoder")
        }
        let force = keyframeRequested
        keyframeRequested = false
        return try encoder.encode(frame, pts: pts, forceKeyframe: force).map(sample)
    }

    func flush() throws(EncoderError) -> [EncodedSample] {
        try encoder.flush().map(sample)
    }

    func inputDiscontinuity() {}

    func requestKeyframe() { keyframeRequested = true }

    private func sample(_ f: EncodedVideoFrame) -> EncodedSample {
        EncodedSample(track: track, pts: f.pts, dts: f.dts, duration: frameDuration, isKeyframe: f.isKeyframe, bytes: f.data)
    }
}

/// Opus through ``OpusEncoder``: PCM of any chunking is regrouped into 20 ms frames;
/// each packet is stamped with the time of its first sample.
final class OpusSampleEncoder: SampleEncoder {
    let track: UInt8
    private let encoder: OpusEncoder
    private let channels: Int
    private var pending: [Int16] = []
    private var pendingPTS: Int64 = 0
    private static let packetDuration: Int64 = 20_000_000

    init(track: UInt8, channels: Int, settings: AudioEncodingSettings) throws(EncoderError) {
        guard let application = settings.opusApplication else {
            throw EncoderError(.invalidSettings, "Opus application '\(settings.application)' is not audio, voip or lowdelay")
        }
        self.track = track
        self.channels = channels
        encoder = try OpusEncoder(sampleRate: 48000, channels: channels, bitrate: settings.bitrate.map { Int32($0) },
                                    complexity: settings.complexity.map { Int32($0) }, application: application)
        pending.reserveCapacity(encoder.frameSize * channels)
    }

    var mediaFormat: MediaFormat {
        .opus(OpusFormat(sampleRate: 48000, channels: UInt8(channels), opusHead: encoder.opusHead))
    }

    var timescale: UInt32 { 48000 }

    func encode(_ media: CapturedMedia) throws(EncoderError) -> [EncodedSample] {
        guard case .audio(let pcm, let frames, let pts) = media else {
            throw EncoderError(.wrongFrameSize, "track \(track): video given to the audio encoder")
        }
        var out: [EncodedSample] = []
        if pendingDiscontinuity {
            pendingDiscontinuity = false
            out += try completePartialFrame()
        }
        inputFrames += frames
        let frameSize = encoder.frameSize
        var consumed = 0
        while consumed < frames {
            if pending.isEmpty {
                pendingPTS = pts + nanoseconds(count: Int64(consumed), numerator: 48000, denominator: 1)
            }
            let take = min(frameSize - pending.count / channels, frames - consumed)
            pending.append(contentsOf: pcm[(consumed * channels)..<((consumed + take) * channels)])
            consumed += take
            if pending.count == frameSize * channels {
                out.append(try emit())
            }
        }
        return out
    }

    /// End of the track: the partial frame is completed with silence, and libopus's lookahead
    /// (`preSkip` samples it still holds) is carried out by one more silent frame when the
    /// padding did not already cover it — so the decoded track, after the decoder drops
    /// `preSkip`, holds every input sample (ffmpeg ends its Opus streams the same way).
    func flush() throws(EncoderError) -> [EncodedSample] {
        var out = try completePartialFrame()
        if emittedFrames > 0, emittedFrames - encoder.preSkip < inputFrames {
            pendingPTS = lastEmittedPTS + Self.packetDuration
            pending.append(contentsOf: repeatElement(0, count: encoder.frameSize * channels))
            out.append(try emit())
        }
        return out
    }

    private func completePartialFrame() throws(EncoderError) -> [EncodedSample] {
        guard !pending.isEmpty else { return [] }
        pending.append(contentsOf: repeatElement(0, count: encoder.frameSize * channels - pending.count))
        return [try emit()]
    }

    /// Input samples (per channel) and samples emitted as packets, silence included.
    private var inputFrames = 0
    private var emittedFrames = 0
    private var lastEmittedPTS: Int64 = 0

    /// After lost input, a partial frame would splice audio from both sides of the gap:
    /// it is completed with silence and sent as it is.
    func inputDiscontinuity() {
        pendingDiscontinuity = true
    }

    private var pendingDiscontinuity = false

    func requestKeyframe() {}

    private func emit() throws(EncoderError) -> EncodedSample {
        let packet = try encoder.encode(pending)
        pending.removeAll(keepingCapacity: true)
        emittedFrames += encoder.frameSize
        lastEmittedPTS = pendingPTS
        return EncodedSample(track: track, pts: pendingPTS, dts: pendingPTS, duration: Self.packetDuration, isKeyframe: true, bytes: packet)
    }
}

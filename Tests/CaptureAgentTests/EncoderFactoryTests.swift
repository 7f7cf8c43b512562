import Shared
import Testing
import WireProtocol
@testable import CaptureAgentCore

/// The agent's end of the codec seam: which encoder a source's codec gets.
@Suite("Encoder factory")
struct EncoderFactoryTests {
    static let camera = SourceFormat.video(width: 64, height: 48, fpsNumerator: 30, fpsDenominator: 1)
    static let microphone = SourceFormat.audio(sampleRate: 48000, channels: 1)
    static let video = VideoEncodingSettings(preset: "ultrafast", threads: 1)

    @Test("pictures get H.264 and sound gets Opus, each with its wire format")
    func knownCodecs() throws {
        #expect(EncoderFactory.codec(for: Self.camera.kind) == .h264)
        #expect(EncoderFactory.codec(for: Self.microphone.kind) == .opus)
        let h264 = try EncoderFactory.encoder(codec: .h264, track: 1, format: Self.camera, video: Self.video, audio: AudioEncodingSettings())
        #expect(h264 is H264SampleEncoder && h264.mediaFormat.codec == .h264)
        let opus = try EncoderFactory.encoder(codec: .opus, track: 2, format: Self.microphone, video: Self.video, audio: AudioEncodingSettings())
        #expect(opus is OpusSampleEncoder && opus.mediaFormat.codec == .opus)
    }

    @Test("a third codec, or a codec for the other kind of source, is refused by name")
    func thirdCodecRefused() {
        #expect(throws: UnsupportedCodecError(codec: "aac", place: "the agent's encoder factory for audio S16LE 48000 Hz 1 ch")) {
            try EncoderFactory.encoder(codec: "aac", track: 2, format: Self.microphone, video: Self.video, audio: AudioEncodingSettings())
        }
        #expect(throws: UnsupportedCodecError(codec: .opus, place: "the agent's encoder factory for video 64x48 I420 @ 30 fps")) {
            try EncoderFactory.encoder(codec: .opus, track: 1, format: Self.camera, video: Self.video, audio: AudioEncodingSettings())
        }
        let refusal = UnsupportedCodecError(codec: "aac", place: "the agent's encoder factory for audio S16LE 48000 Hz 1 ch")
        #expect("\(refusal)" == "codec aac is not supported by the agent's encoder factory for audio S16LE 48000 Hz 1 ch")
    }
}

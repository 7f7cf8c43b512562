import Foundation
import MediaEncoding
import Testing
import TestSupport

@Suite("OpusEncoder")
struct OpusEncoderTests {
    @Test("Pre-skip and OpusHead follow libopus lookahead and RFC 7845")
    func header() throws {
        let mono = try OpusEncoder()
        #expect(mono.frameSize == 960)
        #expect(mono.preSkip == 312)
        #expect(mono.bitrate == 64000)
        #expect(mono.opusHead == Array("OpusHead".utf8) + [1, 1, 0x38, 0x01, 0x80, 0xBB, 0, 0, 0, 0, 0])

        let stereo = try OpusEncoder(channels: 2, application: .voip)
        #expect(stereo.bitrate == 96000)
        #expect(stereo.preSkip == 312)
        #expect(stereo.opusHead.count == 19)
        #expect(stereo.opusHead[9] == 2)

        let lowDelay = try OpusEncoder(application: .lowDelay)
        #expect(lowDelay.preSkip == 120)
    }

    @Test("Wrong PCM length throws wrongFrameSize")
    func wrongFrameSize() throws {
        let encoder = try OpusEncoder(channels: 2)
        for count in [0, 960, 1919, 1921] {
            do {
                _ = try encoder.encode([Int16](repeating: 0, count: count))
                Issue.record("accepted \(count) samples")
            } catch {
                #expect(error.code == .wrongFrameSize)
            }
        }
        #expect(try !encoder.encode([Int16](repeating: 0, count: 1920)).isEmpty)
    }

    @Test("Invalid settings are rejected")
    func invalidSettings() {
        expectEncoderError(.invalidSettings) { _ = try OpusEncoder(sampleRate: 44100) }
        expectEncoderError(.invalidSettings) { _ = try OpusEncoder(channels: 3) }
        expectEncoderError(.invalidSettings) { _ = try OpusEncoder(bitrate: 10) }
        expectEncoderError(.invalidSettings) { _ = try OpusEncoder(complexity: 11) }
        expectEncoderError(.invalidSettings) { _ = try OpusEncoder(complexity: -1) }
    }

    @Test("A lower complexity still encodes; libopus takes 0 and 10")
    func complexity() throws {
        let tone = TestToneAudio(sampleRate: 48000, channels: 1)
        for complexity: Int32 in [0, 3, 10] {
            let encoder = try OpusEncoder(channels: 1, complexity: complexity)
            let packet = try encoder.encode(tone.samples(from: 0, count: 960))
            #expect(!packet.isEmpty, "complexity \(complexity)")
        }
    }

    @Test("Ogg Opus file passes ffmpeg and beeps decode at 0 s and 1 s", .enabled(if: ffmpegAvailable), arguments: [1, 2])
    func oggRoundTrip(channels: Int) throws {
        let encoder = try OpusEncoder(channels: channels)
        let tone = TestToneAudio(sampleRate: 48000, channels: channels)
        let packetCount = 60  // 1.2 s, so the beep at 1 s is inside
        var packets: [[UInt8]] = []
        for i in 0..<packetCount {
            let pcm = tone.samples(from: Int64(i * encoder.frameSize), count: encoder.frameSize)
            let packet = try encoder.encode(pcm)
            #expect(packet.count <= OpusEncoder.maxPacketSize)
            packets.append(packet)
        }

        let dir = try TemporaryDirectory(prefix: "MediaEncodingTests")
        let file = dir.fileURL("tone.opus")
        try Data(OggOpusWriter.file(opusHead: encoder.opusHead, packets: packets, samplesPerPacket48k: 960)).write(to: file)

        let check = try runTool("ffmpeg", ["-v", "error", "-i", file.path, "-f", "null", "-"])
        #expect(check.status == 0)
        #expect(check.stderr.isEmpty, "ffmpeg reported: \(check.stderr)")

        let decoded = try runTool("ffmpeg", ["-v", "error", "-i", file.path, "-f", "s16le", "-ac", "\(channels)", "-ar", "48000", "-"])
        #expect(decoded.status == 0, "\(decoded.stderr)")
        let pcm = decoded.stdout.int16Samples
        // The decoder drops the pre-skip, so output sample k is input sample k.
        #expect(pcm.count / channels == packetCount * 960 - encoder.preSkip)

        let onsets = TestToneReader.beepOnsets(samples: pcm, sampleRate: 48000, channels: channels)
        #expect(onsets.count == 2, "onsets: \(onsets)")
        let tolerance = 48 * 3  // 3 ms
        if onsets.count == 2 {
            #expect(abs(onsets[0] - 0) <= tolerance, "onsets: \(onsets)")
            #expect(abs(onsets[1] - 48000) <= tolerance, "onsets: \(onsets)")
        }
    }

    @Test("Ogg CRC matches the published check value")
    func oggCRC() {
        // CRC-32/CKSUM ("123456789" → 0x765E7680) is the same CRC plus a final inversion.
        #expect(OggOpusWriter.crc(Array("123456789".utf8)) == 0x89A1_897F)
    }
}

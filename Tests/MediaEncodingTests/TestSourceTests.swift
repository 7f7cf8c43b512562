import Shared
import MediaEncoding
import Testing

@Suite("Synthetic sources")
struct TestSourceTests {
    static let indices = [0, 1, 2, 29, 30, 31, 255, 4095, 4096, 12345, 1 << 20, (1 << 24) - 1]

    @Test("Video frames are deterministic and move")
    func videoDeterminism() {
        let a = TestPatternVideo(width: 320, height: 240, fps: 30, label: "CAM A")
        let b = TestPatternVideo(width: 320, height: 240, fps: 30, label: "CAM A")
        for i in Self.indices {
            #expect(a.frame(index: i) == b.frame(index: i))
            #expect(a.frame(index: i).isWellFormed)
        }
        #expect(a.frame(index: 1).y != a.frame(index: 2).y)
        #expect(a.frame(index: 1).u != a.frame(index: 2).u)
    }

    @Test("Tiny and odd-shaped frames render without crashing", arguments: [(2, 2), (16, 16), (64, 48), (1280, 8), (8, 720)])
    func smallSizes(width: Int, height: Int) {
        let pattern = TestPatternVideo(width: width, height: height, fps: 25, label: "kamera ü 1")
        for i in [0, 1, 24, 25, 99_999] {
            #expect(pattern.frame(index: i).isWellFormed)
        }
    }

    @Test("Bar code and flash read back from raw frames", arguments: [(320, 240), (160, 120), (640, 480), (1280, 720), (1920, 1080)])
    func readerRoundTrip(width: Int, height: Int) {
        let pattern = TestPatternVideo(width: width, height: height, fps: 30, label: "CAM-1")
        for i in Self.indices {
            let frame = pattern.frame(index: i)
            #expect(TestPatternReader.frameNumber(y: frame.y, width: width, height: height) == i, "index \(i)")
            #expect(TestPatternReader.isFlash(y: frame.y, width: width, height: height) == (i % 30 == 0), "index \(i)")
        }
        // The bar code carries 24 bits.
        let wrapped = pattern.frame(index: (1 << 24) + 5)
        #expect(TestPatternReader.frameNumber(y: wrapped.y, width: width, height: height) == 5)
    }

    @Test("Reader rejects pictures without a bar code")
    func readerRejects() {
        let (w, h) = (320, 240)
        #expect(TestPatternReader.frameNumber(y: [UInt8](repeating: 16, count: w * h), width: w, height: h) == nil)
        #expect(TestPatternReader.frameNumber(y: [UInt8](repeating: 235, count: w * h), width: w, height: h) == nil)
        #expect(TestPatternReader.frameNumber(y: [UInt8](repeating: 128, count: w * h), width: w, height: h) == nil)
        var rng = SplitMix64(seed: 42)
        let noise = (0..<(w * h)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        #expect(TestPatternReader.frameNumber(y: noise, width: w, height: h) == nil)
        #expect(TestPatternReader.frameNumber(y: [1, 2, 3], width: w, height: h) == nil)
        #expect(!TestPatternReader.isFlash(y: [UInt8](repeating: 16, count: w * h), width: w, height: h))
    }

    @Test("Bar code survives moderate noise")
    func readerNoise() {
        let (w, h) = (320, 240)
        let pattern = TestPatternVideo(width: w, height: h, fps: 30)
        var rng = SplitMix64(seed: 7)
        var y = pattern.frame(index: 0xA5A5A5).y
        for k in y.indices {
            let delta = Int(rng.next() % 61) - 30
            y[k] = UInt8(clamping: Int(y[k]) + delta)
        }
        #expect(TestPatternReader.frameNumber(y: y, width: w, height: h) == 0xA5A5A5)
    }

    @Test("Audio is deterministic regardless of chunking")
    func audioDeterminism() {
        let tone = TestToneAudio(channels: 2)
        let whole = tone.samples(from: 1000, count: 4000)
        #expect(whole.count == 8000)
        #expect(whole == tone.samples(from: 1000, count: 1500) + tone.samples(from: 2500, count: 2500))
        #expect(tone.samples(from: 1 << 40, count: 960) == TestToneAudio(channels: 2).samples(from: 1 << 40, count: 960))
        // Channels are identical copies.
        #expect(stride(from: 0, to: whole.count, by: 2).allSatisfy { whole[$0] == whole[$0 + 1] })
    }

    @Test("Beeps start exactly at multiples of the sample rate")
    func beepOnsets() {
        let tone = TestToneAudio()
        let samples = tone.samples(from: 0, count: 3 * 48000)
        let onsets = TestToneReader.beepOnsets(samples: samples, sampleRate: 48000)
        #expect(onsets.count == 3)
        for (k, onset) in onsets.enumerated() {
            #expect(abs(onset - k * 48000) <= 2, "onsets \(onsets)")
        }
        // Starting mid-second: the next beep is 24000 samples in.
        let later = TestToneReader.beepOnsets(samples: tone.samples(from: 72000, count: 48000), sampleRate: 48000)
        #expect(later.count == 1 && abs(later[0] - 24000) <= 2, "onsets \(later)")
        // Between beeps the tone stays quiet (−30 dBFS peak).
        let quiet = tone.samples(from: 10000, count: 30000)
        #expect(quiet.allSatisfy { abs(Int($0)) <= 1037 })
        #expect(quiet.contains { abs(Int($0)) > 1000 })
    }
}


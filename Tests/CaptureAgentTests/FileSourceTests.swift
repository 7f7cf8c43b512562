import Foundation
import Testing
import TestSupport
@testable import CaptureAgentCore

@Suite("y4m and wav file sources")
struct FileSourceTests {
    @Test func parsesY4MHeaders() throws {
        let h = try Y4MHeader.parse(Array("YUV4MPEG2 W640 H480 F30000:1001 Ip A1:1 C420jpeg XYSCSS=420JPEG".utf8))
        #expect(h == Y4MHeader(width: 640, height: 480, fpsNumerator: 30000, fpsDenominator: 1001, colorspace: "420jpeg"))
        #expect(h.frameSize == 640 * 480 * 3 / 2)
        // No C tag means 4:2:0.
        #expect(try Y4MHeader.parse(Array("YUV4MPEG2 W2 H2 F25:1".utf8)).colorspace == "420jpeg")
        #expect(try Y4MHeader.parse(Array("YUV4MPEG2 W2 H2 F25:1 C420mpeg2".utf8)).colorspace == "420mpeg2")
    }

    @Test(arguments: [
        ("RIFF W2 H2 F25:1", "not a YUV4MPEG2 file"),
        ("YUV4MPEG2 W640 H480 F30:1 C444", "only C420"),
        ("YUV4MPEG2 W640 H480 F30:1 Cmono", "only C420"),
        ("YUV4MPEG2 W640 H480 F30:1 C420p10", "only C420"),
        ("YUV4MPEG2 W640 F30:1", "W and H"),
        ("YUV4MPEG2 W640 H480", "frame rate"),
        ("YUV4MPEG2 W640 H480 F30:0", "bad frame rate"),
        ("YUV4MPEG2 W641 H480 F30:1", "odd"),
    ])
    func rejectsUnsupportedY4M(header: String, expected: String) {
        let error = #expect(throws: CaptureError.self) { try Y4MHeader.parse(Array(header.utf8), path: "clip.y4m") }
        #expect(error?.code == .invalidInput)
        #expect(error?.message.contains(expected) == true, "\(error?.message ?? "")")
        #expect(error?.message.hasPrefix("clip.y4m") == true)
    }

    @Test func readsY4MFramesWithFileTimestamps() throws {
        let dir = try TemporaryDirectory(prefix: "capture-agent-tests")
        let f0 = [UInt8](repeating: 10, count: 4 * 2) + [UInt8](repeating: 20, count: 2) + [UInt8](repeating: 30, count: 2)
        let f1 = [UInt8](repeating: 11, count: 8) + [UInt8](repeating: 21, count: 2) + [UInt8](repeating: 31, count: 2)
        let path = try dir.file("a.y4m", y4m(header: "YUV4MPEG2 W4 H2 F25:2 Ip", frames: [f0, f1]))
        let clock = ManualClock(start: 3_000_000_000, autoAdvance: true)
        let source = Y4MFileSource(path: path, clock: clock, paced: true)
        try source.start()
        #expect(source.format == .video(width: 4, height: 2, fpsNumerator: 25, fpsDenominator: 2))
        guard case .video(let a, let pa)? = try source.read(), case .video(let b, let pb)? = try source.read() else {
            Issue.record("expected two frames")
            return
        }
        #expect(try source.read()?.pts == nil)
        #expect(a.y == [UInt8](repeating: 10, count: 8) && a.u == [20, 20] && a.v == [30, 30])
        #expect(b.y.first == 11 && b.v == [31, 31])
        #expect(pa == 3_000_000_000)
        #expect(pb == 3_080_000_000)  // 2/25 s later
        #expect(clock.deadlines == [pa, pb])

        let fast = Y4MFileSource(path: path, clock: ManualClock(start: 0), paced: false)
        try fast.start()
        #expect(try fast.read()?.pts == 0)
        #expect(try fast.read()?.pts == 80_000_000)  // stamped from the file, not waiting
    }

    @Test func aTruncatedY4MFrameIsAClearError() throws {
        let dir = try TemporaryDirectory(prefix: "capture-agent-tests")
        var bytes = y4m(header: "YUV4MPEG2 W4 H2 F25:1", frames: [[UInt8](repeating: 1, count: 12)])
        bytes += Array("FRAME\n".utf8) + [1, 2, 3]
        let source = Y4MFileSource(path: try dir.file("t.y4m", bytes), clock: ManualClock(), paced: false)
        try source.start()
        _ = try source.read()
        let error = #expect(throws: CaptureError.self) { try source.read() }
        #expect(error?.message.contains("ends inside frame 1") == true)
    }

    @Test func readsWAVIn20msChunksWithAShortLastOne() throws {
        let dir = try TemporaryDirectory(prefix: "capture-agent-tests")
        let samples = (0..<(960 * 2 + 100)).map { Int16(truncatingIfNeeded: $0 * 7 - 3000) }
        let clock = ManualClock(start: 1_000_000_000, autoAdvance: true)
        let source = WAVFileSource(path: try dir.file("a.wav", wav(samples: samples)), clock: clock)
        try source.start()
        #expect(source.format == .audio(sampleRate: 48000, channels: 1))
        var got: [Int16] = []
        var stamps: [(Int, Int64)] = []
        while case .audio(let pcm, let frames, let pts)? = try source.read() {
            got += pcm
            stamps.append((frames, pts))
        }
        #expect(got == samples)
        #expect(stamps.map(\.0) == [960, 960, 100])
        #expect(stamps.map(\.1) == [1_000_000_000, 1_020_000_000, 1_040_000_000])
        #expect(clock.deadlines.last == 1_000_000_000 + Int64(2020) * 1_000_000_000 / 48000)
    }

    @Test func readsStereoAndExtensiblePCM() throws {
        let dir = try TemporaryDirectory(prefix: "capture-agent-tests")
        let source = WAVFileSource(path: try dir.file("s.wav", wav(channels: 2, samples: [1, -1, 2, -2], extensible: true)), clock: ManualClock(), paced: false)
        try source.start()
        #expect(source.format == .audio(sampleRate: 48000, channels: 2))
        guard case .audio(let pcm, let frames, _)? = try source.read() else { Issue.record("no audio"); return }
        #expect(frames == 2 && pcm == [1, -1, 2, -2])
    }

    @Test(arguments: [
        (UInt16(1), UInt16(1), UInt32(44100), UInt16(16), "44100 Hz"),
        (UInt16(1), UInt16(1), UInt32(48000), UInt16(24), "24-bit"),
        (UInt16(3), UInt16(1), UInt32(48000), UInt16(32), "not PCM"),
        (UInt16(1), UInt16(6), UInt32(48000), UInt16(16), "6 channels"),
    ])
    func rejectsOtherWAVFormats(format: UInt16, channels: UInt16, rate: UInt32, bits: UInt16, expected: String) throws {
        let dir = try TemporaryDirectory(prefix: "capture-agent-tests")
        let source = WAVFileSource(path: try dir.file("x.wav", wav(format: format, channels: channels, rate: rate, bits: bits, samples: [0, 0])), clock: ManualClock())
        let error = #expect(throws: CaptureError.self) { try source.start() }
        #expect(error?.message.contains(expected) == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("need") == true)
    }

    @Test func rejectsNonWAVAndMissingFiles() throws {
        let dir = try TemporaryDirectory(prefix: "capture-agent-tests")
        let notWav = WAVFileSource(path: try dir.file("n.wav", Array("hello world, not riff".utf8)), clock: ManualClock())
        #expect(throws: CaptureError(.invalidInput, "")) { try notWav.start() }
        let missing = WAVFileSource(path: dir.path + "/missing.wav", clock: ManualClock())
        let error = #expect(throws: CaptureError.self) { try missing.start() }
        #expect(error?.code == .openFailed)
        #expect(error?.message.contains("missing.wav") == true)
    }

    @Test func fileSourcesMadeForOneAgentShareItsEpochWhateverTheirStartOrder() throws {
        let dir = try TemporaryDirectory(prefix: "capture-agent-tests")
        let frame = [UInt8](repeating: 16, count: 8) + [UInt8](repeating: 128, count: 4)
        let video = try dir.file("v.y4m", y4m(header: "YUV4MPEG2 W4 H2 F30:1 Ip", frames: [frame, frame]))
        let audio = try dir.file("a.wav", wav(samples: [Int16](repeating: 0, count: 960 * 2)))
        let clock = ManualClock(start: 5_000_000_000)
        let epoch = clock.now()
        let camera = try SourceSpec.parse("cam=y4m:\(video)").makeSource(clock: clock, epoch: epoch, fastFiles: false)
        let mic = try SourceSpec.parse("mic=wav:\(audio)").makeSource(clock: clock, epoch: epoch, fastFiles: false)
        try camera.start()
        clock.advance(by: 55_500_000)  // an encoder opened in between: the gap seen as A/V offset before
        try mic.start()
        #expect(try camera.read()?.pts == epoch)
        #expect(try mic.read()?.pts == epoch, "both files begin at the agent's epoch: A/V offset 0")
    }
}

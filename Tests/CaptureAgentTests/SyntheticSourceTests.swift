import Foundation
import MediaEncoding
import NIOConcurrencyHelpers
import Testing
@testable import CaptureAgentCore

@Suite("Synthetic sources: deterministic and paced by the injected clock")
struct SyntheticSourceTests {
    @Test func videoFramesAreDueAtEpochPlusNOverFpsAndCarryTheirIndex() throws {
        let clock = ManualClock(start: 1_000, autoAdvance: true)
        let epoch: Int64 = 2_000_000_000
        let source = TestVideoSource(width: 320, height: 240, fps: 30, label: "cam", clock: clock, epoch: epoch, frameLimit: 31)
        try source.start()
        var pts: [Int64] = []
        var flashes: [Int] = []
        var index = 0
        while let media = try source.read() {
            guard case .video(let frame, let t) = media else { Issue.record("not video"); return }
            pts.append(t)
            #expect(TestPatternReader.frameNumber(y: frame.y, width: 320, height: 240) == index)
            if TestPatternReader.isFlash(y: frame.y, width: 320, height: 240) { flashes.append(index) }
            index += 1
        }
        #expect(index == 31)
        #expect(pts == (0..<31).map { epoch + Int64($0) * 1_000_000_000 / 30 })
        // The source waited for exactly those instants, and nothing else.
        #expect(clock.deadlines == pts)
        #expect(flashes == [0, 30])
        #expect(pts[30] == epoch + 1_000_000_000)
    }

    @Test func twoInstancesProduceIdenticalFrames() throws {
        let a = TestVideoSource(width: 160, height: 120, fps: 25, label: "x", clock: ManualClock(autoAdvance: true), epoch: 0, frameLimit: 5)
        let b = TestVideoSource(width: 160, height: 120, fps: 25, label: "x", clock: ManualClock(start: 99, autoAdvance: true), epoch: 0, frameLimit: 5)
        try a.start()
        try b.start()
        while let x = try a.read() {
            let y = try #require(try b.read())
            guard case .video(let fx, let px) = x, case .video(let fy, let py) = y else { return }
            #expect(fx == fy)
            #expect(px == py)
        }
    }

    @Test func aSleepingSourceWaitsForTheManualClock() throws {
        let clock = ManualClock(start: 0)
        let source = TestVideoSource(width: 64, height: 64, fps: 10, label: "", clock: clock, epoch: 0, frameLimit: 3)
        try source.start()
        let got = NIOLockedValueBox<[Int64]>([])
        let done = DispatchSemaphore(value: 0)
        let box = UncheckedBox(source)
        Thread.detachNewThread {
            // A read error ends the thread as the last frame does; the expectation below then finds frames missing.
            while let m = try? box.value.read() { got.withLockedValue { $0.append(m.pts) } }
            done.signal()
        }
        // Frame 0 is due at once; frame 1 only when the clock reaches 100 ms.
        clock.waitForSleepers(1)
        clock.set(100_000_000)
        clock.waitForSleepers(1)
        clock.set(200_000_000)
        done.wait()
        #expect(got.withLockedValue { $0 } == [0, 100_000_000, 200_000_000])
        #expect(clock.deadlines == [0, 100_000_000, 200_000_000])
    }

    @Test func audioChunksAreTwentyMillisecondsWithBeepsAtTheFlashInstants() throws {
        let clock = ManualClock(start: 0, autoAdvance: true)
        let epoch: Int64 = 5_000_000_000
        let source = TestAudioSource(channels: 1, clock: clock, epoch: epoch, chunkLimit: 100)
        try source.start()
        var pcm: [Int16] = []
        var pts: [Int64] = []
        while let media = try source.read() {
            guard case .audio(let samples, let frames, let t) = media else { return }
            #expect(frames == 960)
            pcm += samples
            pts.append(t)
        }
        #expect(pts == (0..<100).map { epoch + Int64($0) * 20_000_000 })
        // Each chunk is handed over when its last sample has been "recorded".
        #expect(clock.deadlines == (1...100).map { epoch + Int64($0) * 20_000_000 })
        let onsets = TestToneReader.beepOnsets(samples: pcm, sampleRate: 48000)
        // At epoch and epoch + 1 s, like the flashes of frames 0 and 30 (the reader finds the
        // first sample above its threshold; the beep's first sample is sin(0) = 0).
        #expect(onsets.count == 2)
        #expect(onsets.count == 2 && abs(onsets[0] - 0) <= 2 && abs(onsets[1] - 48000) <= 2)
        let again = TestAudioSource(channels: 1, clock: ManualClock(autoAdvance: true), epoch: 0, chunkLimit: 100)
        try again.start()
        var pcm2: [Int16] = []
        while case .audio(let s, _, _)? = try again.read() { pcm2 += s }
        #expect(pcm == pcm2)
    }
}

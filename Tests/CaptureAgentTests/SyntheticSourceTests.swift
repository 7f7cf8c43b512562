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

/// ``SkewedClock``, the testing stand-in for another host's clock, and the test sources under
/// it: their schedule stays real time, only their stamps are skewed.
@Suite("Skewed clock")
struct SkewedClockTests {
    @Test func convertsBothWaysAndRunsFast() {
        let clock = SkewedClock(offset: 3_600_000_000_000, driftPPM: 250)
        let system = SystemMonotonicClock().now()
        let later = system + 10_000_000_000
        #expect(clock.time(atSystemTime: later) - clock.time(atSystemTime: system) == 10_002_500_000, "10 s of real time read 250 ppm fast")
        for t in [system, later, system - 5_000_000_000] {
            let back = clock.systemTime(at: clock.time(atSystemTime: t))
            #expect(back >= t && back <= t + 1, "rounded up by at most 1 ns")
        }
        let before = SystemMonotonicClock().now()
        let now = clock.now()
        #expect(now - before >= 3_600_000_000_000)
        clock.sleep(until: now + 1_000_000)
        #expect(clock.now() >= now + 1_000_000)
    }

    @Test func testSourcesKeepRealTimeAndStampWithTheClock() throws {
        let clock = SkewedClock(offset: 1_000_000_000_000, driftPPM: 100)
        let epoch = clock.now()
        let video = TestVideoSource(width: 64, height: 48, fps: 25, label: "v", clock: clock, epoch: epoch, frameLimit: 51, paced: false)
        try video.start()
        var stamps: [Int64] = []
        while let media = try video.read() {
            if case .video(_, let pts) = media { stamps.append(pts) }
        }
        #expect(stamps.first == epoch)
        // Frame 50 is 2 s of real time after frame 0: 2 s + 100 ppm on the skewed clock.
        #expect(try #require(stamps.last) - epoch == 2_000_200_000)
    }
}

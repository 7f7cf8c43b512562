import Testing
@testable import CaptureAgentCore

@Suite("Pacing a device without a clock, and throttled drop warnings")
struct DeviceRatePacerTests {
    static let period: Int64 = 20_000_000  // 960 frames at 48 kHz

    @Test func anUnclockedDeviceIsPacedOncePastTheTolerance() {
        // 100 ms buffer + 250 ms margin = 350 ms tolerance; every read returns at the same instant.
        var pacer = DeviceRatePacer(sampleRate: 48000, bufferFrames: 4800)
        #expect(pacer.tolerance == 350_000_000)
        let t0: Int64 = 5_000_000_000
        var deadlines: [Int64?] = []
        for _ in 0..<20 { deadlines.append(pacer.afterReading(frames: 960, at: t0)) }
        // The window began one period before the first read. Chunk k (1-based) ends at
        // t0 + (k − 1) × 20 ms; the lead passes 350 ms at k = 19 (360 ms).
        #expect(deadlines[0..<18].allSatisfy { $0 == nil })
        #expect(deadlines[18] == t0 + 18 * Self.period)
        #expect(pacer.isPacing)
        // Paced: the caller slept until each deadline; the next one is one period later.
        var now = deadlines[19]!
        #expect(now == t0 + 19 * Self.period)
        for k in 20..<100 {
            let deadline = pacer.afterReading(frames: 960, at: now)
            #expect(deadline == t0 + Int64(k) * Self.period)
            now = deadline ?? now
        }
    }

    @Test func realDevicesAreNeverPaced() {
        // Jitter up to 8 ms late, a 300 ms stall answered by a burst of the 100 ms buffer,
        // and a crystal 1000 ppm fast, over one hour.
        var pacer = DeviceRatePacer(sampleRate: 48000, bufferFrames: 4800)
        let fast = 1.001
        var deviceTime: Int64 = 0
        var paced = 0
        for k in 0..<180_000 {
            deviceTime += Int64(Double(Self.period) / fast)
            var readAt = deviceTime + Int64((k * 7_919) % 8_000_000)
            if k % 5_000 == 4_999 { readAt += 100_000_000 }  // the burst: late by a whole buffer
            if pacer.afterReading(frames: 960, at: readAt) != nil { paced += 1 }
        }
        #expect(paced == 0)
        #expect(!pacer.isPacing)
    }

    @Test func aPacedDeviceFarBehindDoesNotReplayTheGap() {
        var pacer = DeviceRatePacer(sampleRate: 48000, bufferFrames: 0, margin: 100_000_000)
        var now: Int64 = 1_000_000_000
        for _ in 0..<10 { _ = pacer.afterReading(frames: 960, at: now) }
        #expect(pacer.isPacing)
        // The process was stopped for 10 s; the next reads are paced from now, not replayed.
        now += 10_000_000_000
        #expect(pacer.afterReading(frames: 960, at: now) == nil)
        let next = pacer.afterReading(frames: 960, at: now)
        #expect(next == now + Self.period)
    }

    @Test func theClockMapperNeverMovesTimeBack() {
        // An unclocked device read in a burst: the sample count runs 600 ms ahead of the clock.
        var mapper = AudioClockMapper(sampleRate: 48000)
        var stamps: [AudioClockMapper.Stamp] = []
        for _ in 0..<40 { stamps.append(mapper.stamp(frames: 960, delayFrames: 0, now: 2_000_000_000)) }
        let pts = stamps.map(\.pts)
        #expect(zip(pts, pts.dropFirst()).allSatisfy { $1 >= $0 + Self.period - mapper.maxSlewPerChunk })
        #expect(stamps.contains { $0.discontinuity })
        #expect(stamps.allSatisfy { $0.lostChunks == 0 })
    }

    @Test func dropWarningsAreSummedPerInterval() {
        var throttle = LogThrottle(interval: 5_000_000_000)
        #expect(throttle.record(3, at: 0) == 3)
        #expect(throttle.record(1, at: 1_000_000_000) == nil)
        #expect(throttle.record(2, at: 4_999_999_999) == nil)
        #expect(throttle.record(4, at: 5_000_000_000) == 7)
        #expect(throttle.record(1, at: 6_000_000_000) == nil)
        #expect(throttle.flush() == 1)
        #expect(throttle.flush() == nil)
    }
}

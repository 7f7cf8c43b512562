import Testing
@testable import CaptureAgentCore

@Suite("ALSA capture and the audio clock")
struct ALSACaptureTests {
    /// The real libasound path (open, set_params, readi, delay, close) against the `null`
    /// PCM, which this machine has without a sound card. `null` returns at once, so the
    /// injected clock advances 20 ms per reading, as a real device paces reads.
    @Test(arguments: [1, 2])
    func nullDeviceGivesCorrectlyTimestampedSilence(channels: Int) throws {
        let clock = ManualClock(start: 10_000_000_000, stepPerRead: 20_000_000)
        let source = ALSACaptureSource(device: "null", channels: channels, clock: clock)
        try source.start()
        defer { source.stop() }
        #expect(source.format == .audio(sampleRate: 48000, channels: channels))
        var stamps: [Int64] = []
        for _ in 0..<50 {
            guard case .audio(let pcm, let frames, let pts)? = try source.read() else {
                Issue.record("no audio from alsa:null")
                return
            }
            #expect(frames == 960)
            #expect(pcm.count == 960 * channels)
            #expect(pcm.allSatisfy { $0 == 0 })
            stamps.append(pts)
        }
        // First chunk anchored so that it ends when it was read; then exactly 20 ms apart.
        let first = 10_000_000_000 - 20_000_000
        #expect(stamps == (0..<50).map { Int64(first) + Int64($0) * 20_000_000 })
        #expect(source.takeLostCount() == 0)
        #expect(source.clockMapper.resyncCount == 0)
    }

    /// `null` has no clock: read with a clock that does not move by itself, it would deliver
    /// without end. The source finds out and paces reads by the clock: once the audio is a
    /// buffer plus 250 ms ahead, every read sleeps until its chunk's end.
    @Test func nullDeviceWithoutAClockIsPacedByTheMonotonicClock() throws {
        let clock = ManualClock(start: 10_000_000_000, autoAdvance: true)
        let source = ALSACaptureSource(device: "null", channels: 1, clock: clock)
        try source.start()
        defer { source.stop() }
        var stamps: [Int64] = []
        for _ in 0..<200 {
            guard case .audio(_, 960, let pts)? = try source.read() else {
                Issue.record("no audio from alsa:null")
                return
            }
            stamps.append(pts)
        }
        #expect(source.isPacedByClock)
        #expect(source.takeNotices().count == 1)
        #expect(source.takeNotices().isEmpty)
        // Each sleep ends one period after the previous: real time, 20 ms per chunk.
        let deadlines = clock.deadlines
        #expect(deadlines.count > 150)
        #expect(zip(deadlines, deadlines.dropFirst()).allSatisfy { $1 - $0 == 20_000_000 })
        // 200 chunks took 4 s of clock time, and timestamps never went back.
        #expect(clock.now() == stamps[0] + 200 * 20_000_000)
        #expect(zip(stamps, stamps.dropFirst()).allSatisfy { $1 > $0 })
    }

    @Test func aMissingDeviceIsAClearError() {
        let source = ALSACaptureSource(device: "no-such-pcm-device", clock: ManualClock())
        let error = #expect(throws: CaptureError.self) { try source.start() }
        #expect(error?.code == .openFailed)
        #expect(error?.message.contains("alsa:no-such-pcm-device") == true)
    }

    @Test func sampleCountSetsTheSpacingAndJitterDoesNotLeakIn() {
        var mapper = AudioClockMapper(sampleRate: 48000)
        // Reads wake up late by varying amounts (scheduling), the device is exact.
        let jitter: [Int64] = [0, 3_000_000, 500_000, 4_000_000, 0, 1_000_000]
        var pts: [Int64] = []
        for (k, j) in jitter.enumerated() {
            pts.append(mapper.stamp(frames: 960, delayFrames: 0, now: 1_000_000_000 + Int64(k + 1) * 20_000_000 + j).pts)
        }
        #expect(pts == (0..<6).map { 1_000_000_000 + Int64($0) * 20_000_000 })
    }

    @Test func driftIsSlewedAtMostOneStepPerChunk() {
        var mapper = AudioClockMapper(sampleRate: 48000)
        // A device running 0.1 % slow: each 20 ms chunk arrives 20 µs later than the count says.
        var now: Int64 = 0
        var previous: Int64?
        var steps: [Int64] = []
        for _ in 0..<2000 {
            now += 20_020_000
            let pts = mapper.stamp(frames: 960, delayFrames: 0, now: now).pts
            if let previous { steps.append(pts - previous) }
            previous = pts
        }
        #expect(steps.allSatisfy { $0 >= 20_000_000 && $0 <= 20_000_000 + mapper.maxSlewPerChunk })
        #expect(mapper.totalSlew > 0)
        // It keeps up: the timestamps end within a few ms of the clock.
        #expect(abs((now - 20_000_000) - previous!) < 5_000_000)
        #expect(mapper.resyncCount == 0)
    }

    @Test func aGapReanchorsAndCountsTheLostChunks() {
        var mapper = AudioClockMapper(sampleRate: 48000)
        _ = mapper.stamp(frames: 960, delayFrames: 0, now: 20_000_000)
        _ = mapper.stamp(frames: 960, delayFrames: 0, now: 40_000_000)
        // An overrun: one second went missing.
        mapper.resynchronize()
        let s = mapper.stamp(frames: 960, delayFrames: 0, now: 1_060_000_000)
        #expect(s.discontinuity)
        #expect(s.pts == 1_040_000_000)
        #expect(s.lostChunks == 50)
        #expect(mapper.stamp(frames: 960, delayFrames: 0, now: 1_080_000_000).pts == 1_060_000_000)
    }

    @Test func aStartedStreamIsAnchoredWhereItStartedAndItsBacklogDoesNotSteerTheSlewing() {
        var mapper = AudioClockMapper(sampleRate: 48000)
        mapper.begin(at: 1_000_000_000)
        // The capture thread came 314 ms late and drains the 15 chunks waiting, 1 ms a read.
        // The driver moved its position last at 1.300 s (a period at a time), so every read
        // of the backlog is up to 14 ms stale; then reads wait for each next period.
        var pts: [Int64] = []
        for k in 0..<15 {
            let now = 1_300_000_000 + Int64(k) * 1_000_000
            pts.append(mapper.stamp(frames: 960, delayFrames: (14 - k) * 960, now: now).pts)
        }
        for k in 15..<40 {
            pts.append(mapper.stamp(frames: 960, delayFrames: 0, now: 1_000_000_000 + Int64(k + 1) * 20_000_000).pts)
        }
        #expect(pts == (0..<40).map { 1_000_000_000 + Int64($0) * 20_000_000 })
        #expect(mapper.totalSlew == 0 && mapper.resyncCount == 0)
        // Begin after the first chunk changes nothing.
        mapper.begin(at: 5_000_000_000)
        #expect(mapper.stamp(frames: 960, delayFrames: 0, now: 1_820_000_000).pts == 1_800_000_000)
    }

    @Test func aFastDeviceReadSixChunksAPeriodIsFollowedAtFullSlewRate() {
        var mapper = AudioClockMapper(sampleRate: 48000)
        mapper.begin(at: 0)
        // +1000 ppm: a 20 ms chunk takes 20 ms / 1.001 of real time. The driver moves its
        // position once a period (6 chunks, as with a 500 ms buffer); the reader wakes then and
        // reads all six, 0.1 ms apart.
        let chunk = 20_000_000.0 / 1.001
        var last: (pts: Int64, truth: Double) = (0, 0)
        for period in 0 ..< 500 {  // 60 s
            let boundary = Double((period + 1) * 6) * chunk
            for i in 0 ..< 6 {
                let index = period * 6 + i
                let stamp = mapper.stamp(frames: 960, delayFrames: (5 - i) * 960, now: Int64(boundary) + Int64(i) * 100_000)
                last = (stamp.pts, Double(index) * chunk)
            }
        }
        // Unslewed the last chunk would be 60 ms late; followed, within a few ms.
        #expect(abs(Double(last.pts) - last.truth) < 5_000_000, "\((Double(last.pts) - last.truth) / 1e6) ms off after 60 s")
        #expect(mapper.resyncCount == 0)
    }

    @Test func deviceDelayMovesTheAnchorBack() {
        var mapper = AudioClockMapper(sampleRate: 48000)
        // 480 frames (10 ms) still in the buffer behind this chunk when read returned.
        #expect(mapper.stamp(frames: 960, delayFrames: 480, now: 100_000_000).pts == 70_000_000)
    }
}

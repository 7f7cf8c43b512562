/// Maps audio sample counts onto CLOCK_MONOTONIC (docs/agent.md "Clock model").
///
/// The sample count is the authority for *spacing*: consecutive chunks are exactly
/// `frames / rate` apart, so audio never gets jittery timestamps from thread scheduling.
/// The monotonic clock is the authority for *position*: the first chunk is anchored at
/// `read time − (frames + device delay) / rate`, and afterwards the clock only measures
/// drift (a sound card's crystal runs 10–100 ppm off; 100 ppm is 0.36 s per hour).
///
/// - Small drift (smoothed, above `slewThreshold`) is corrected by moving the anchor by
///   at most `maxSlewPerChunk` per chunk, i.e. timestamps stretch by ≤ 0.5 %: no jump, no
///   audible effect, and A/V stays aligned over hours.
/// - Large drift (above `resyncThreshold`: an overrun, a suspended device) re-anchors at
///   once; the caller marks a discontinuity and reports the lost chunks. A re-anchor never
///   moves time back: a chunk never starts before the previous one ended.
struct AudioClockMapper: Sendable {
    let sampleRate: Int
    var slewThreshold: Int64 = 2_000_000
    var maxSlewPerChunk: Int64 = 100_000
    var resyncThreshold: Int64 = 500_000_000

    private var anchor: Int64?
    private var framesSinceAnchor: Int64 = 0
    private var smoothedDrift: Double = 0
    private var pendingResync = false

    /// The last measured drift (clock minus sample count), nanoseconds; positive when the
    /// device delivers more slowly than the monotonic clock runs.
    private(set) var lastDrift: Int64 = 0
    /// Total correction applied by slewing, nanoseconds.
    private(set) var totalSlew: Int64 = 0
    /// How many times the mapper re-anchored after the first chunk.
    private(set) var resyncCount = 0

    init(sampleRate: Int) {
        self.sampleRate = sampleRate
    }

    /// The result for one chunk.
    struct Stamp: Sendable, Equatable {
        /// Time of the chunk's first sample.
        var pts: Int64
        /// The chunk does not follow the previous one seamlessly.
        var discontinuity: Bool
        /// Chunks of this size presumed lost before this one (from the time gap).
        var lostChunks: Int
    }

    /// Forces a re-anchor on the next chunk (after an overrun was recovered).
    mutating func resynchronize() { pendingResync = true }

    /// The device's stream was started at `instant` (`snd_pcm_start`): its first sample was
    /// captured then, which anchors the first chunk exactly. Without it the first chunk is
    /// anchored from its read, `now − (frames + delay)`, which is only as good as the
    /// driver's position: snd-aloop moves it a period at a time, so a first read that finds
    /// a backlog waiting is up to a period (20 ms) off. Ignored once a chunk was stamped.
    mutating func begin(at instant: Int64) {
        guard anchor == nil else { return }
        anchor = instant
        framesSinceAnchor = 0
    }

    /// Stamps a chunk of `frames` sample frames that `read` returned at `now`, with
    /// `delayFrames` frames still waiting in the device buffer behind it.
    mutating func stamp(frames: Int, delayFrames: Int, now: Int64) -> Stamp {
        let capturedEnd = now - duration(Int64(max(0, delayFrames)))
        let chunk = duration(Int64(frames))
        guard let current = anchor else {
            anchor = capturedEnd - chunk
            framesSinceAnchor = Int64(frames)
            return Stamp(pts: capturedEnd - chunk, discontinuity: false, lostChunks: 0)
        }
        let expectedEnd = current + duration(framesSinceAnchor + Int64(frames))
        let drift = capturedEnd - expectedEnd
        lastDrift = drift
        if pendingResync || abs(drift) > resyncThreshold {
            pendingResync = false
            resyncCount += 1
            let lost = drift > 0 && chunk > 0 ? Int((drift + chunk / 2) / chunk) : 0
            // A device that ran ahead of the clock (negative drift) must not move time back:
            // the chunks already stamped up to `previousEnd` were sent. Start no earlier.
            let previousEnd = current + duration(framesSinceAnchor)
            let pts = max(capturedEnd - chunk, previousEnd)
            anchor = pts
            framesSinceAnchor = Int64(frames)
            smoothedDrift = 0
            return Stamp(pts: pts, discontinuity: true, lostChunks: max(lost, 0))
        }
        // Scheduling latency only ever makes a read look late, so a single reading is
        // noisy; the exponential average reacts to the trend, not to one slow wake-up. A
        // read that found a whole chunk more already waiting did not wait for the device, and
        // on a driver that moves its position a period at a time its reading is up to a
        // period stale: it does not steer the slewing (the re-anchor check above still sees it).
        // The slewing itself goes on at every chunk, or a driver that hands over six chunks a
        // period would be slewed at a sixth of the rate (measured: a +1000 ppm device then
        // stayed 17 ms behind after 65 s).
        if delayFrames < frames { smoothedDrift += (Double(drift) - smoothedDrift) / 16 }
        if abs(smoothedDrift) > Double(slewThreshold) {
            let step = max(-maxSlewPerChunk, min(maxSlewPerChunk, Int64(smoothedDrift)))
            anchor = current + step
            totalSlew += step
            smoothedDrift -= Double(step)
        }
        let pts = anchor! + duration(framesSinceAnchor)
        framesSinceAnchor += Int64(frames)
        return Stamp(pts: pts, discontinuity: false, lostChunks: 0)
    }

    private func duration(_ frames: Int64) -> Int64 {
        nanoseconds(count: frames, numerator: Int64(sampleRate), denominator: 1)
    }
}

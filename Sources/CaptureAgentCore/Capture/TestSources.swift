import MediaEncoding

/// Nanoseconds of `count` periods of `denominator/numerator` seconds, without the
/// rounding drift of adding a rounded frame duration `count` times.
@inline(__always)
func nanoseconds(count: Int64, numerator: Int64, denominator: Int64) -> Int64 {
    // count * 1e9 * den / num, split to stay far from overflow for days of frames.
    let q = count / numerator, r = count % numerator
    return q * 1_000_000_000 * denominator + (r * 1_000_000_000 * denominator) / numerator
}

/// The synthetic camera (`test:WxH@FPS`): ``TestPatternVideo`` paced on the injected
/// clock. Frame `n` is due at `epoch + n/fps` of real time (CLOCK_MONOTONIC, as a camera's own
/// crystal would pace it) and stamped with the clock's reading then, so its content and its
/// timestamp depend on `n` alone. All test sources of one agent share the epoch, so the
/// white flash of frame `k·fps` and the beep of ``TestAudioSource`` share a timestamp. With a
/// clock that is not skewed (``SkewedClock``) real time and the clock's are the same.
final class TestVideoSource: CaptureSource {
    let name: String
    let isLive: Bool
    let format: SourceFormat
    private let pattern: TestPatternVideo
    private let clock: any MonotonicClock
    private let epoch: Int64?
    private let frameLimit: Int?
    private let paced: Bool
    private var start0: Int64 = 0
    private var index: Int64 = 0

    /// - Parameters:
    ///   - epoch: time of frame 0; nil = the clock's time at ``start()``.
    ///   - frameLimit: end of stream after this many frames (nil = endless).
    ///   - paced: wait for each frame's due time (false = as fast as possible, still
    ///     stamped with the due time).
    init(width: Int, height: Int, fps: Int, label: String, clock: any MonotonicClock,
                epoch: Int64? = nil, frameLimit: Int? = nil, paced: Bool = true) {
        self.name = "test:\(width)x\(height)@\(fps)"
        self.pattern = TestPatternVideo(width: width, height: height, fps: fps, label: label)
        self.format = .video(width: width, height: height, fpsNumerator: fps, fpsDenominator: 1)
        self.clock = clock
        self.epoch = epoch
        self.frameLimit = frameLimit
        self.paced = paced
        self.isLive = paced
    }

    func start() throws(CaptureError) {
        start0 = clock.systemTime(at: epoch ?? clock.now())
        index = 0
    }

    func read() throws(CaptureError) -> CapturedMedia? {
        if let frameLimit, index >= Int64(frameLimit) { return nil }
        let due = clock.time(atSystemTime: start0 + nanoseconds(count: index, numerator: Int64(pattern.fps), denominator: 1))
        if paced { clock.sleep(until: due) }
        let frame = pattern.frame(index: Int(index))
        index += 1
        return .video(frame, pts: due)
    }

    func stop() {}
}

/// The synthetic microphone (`test:audio[:CHANNELS]`): ``TestToneAudio`` in 20 ms
/// chunks. Chunk `k` covers samples `[960k, 960k+960)`, is stamped with the clock's reading
/// at real time `epoch + k·20 ms` and becomes available at the end of its span (as a real
/// device would deliver it; its sample clock is real time, like ``TestVideoSource``'s frames).
final class TestAudioSource: CaptureSource {
    static let chunkFrames = 960
    let name: String
    let isLive: Bool
    let format: SourceFormat
    private let tone: TestToneAudio
    private let clock: any MonotonicClock
    private let epoch: Int64?
    private let chunkLimit: Int?
    private let paced: Bool
    private var start0: Int64 = 0
    private var chunk: Int64 = 0

    init(channels: Int = 1, clock: any MonotonicClock, epoch: Int64? = nil, chunkLimit: Int? = nil, paced: Bool = true) {
        self.name = "test:audio:\(channels)"
        self.tone = TestToneAudio(sampleRate: 48000, channels: channels)
        self.format = .audio(sampleRate: 48000, channels: channels)
        self.clock = clock
        self.epoch = epoch
        self.chunkLimit = chunkLimit
        self.paced = paced
        self.isLive = paced
    }

    func start() throws(CaptureError) {
        start0 = clock.systemTime(at: epoch ?? clock.now())
        chunk = 0
    }

    func read() throws(CaptureError) -> CapturedMedia? {
        if let chunkLimit, chunk >= Int64(chunkLimit) { return nil }
        let first = chunk * Int64(Self.chunkFrames)
        let pts = clock.time(atSystemTime: start0 + nanoseconds(count: first, numerator: 48000, denominator: 1))
        let end = clock.time(atSystemTime: start0 + nanoseconds(count: first + Int64(Self.chunkFrames), numerator: 48000, denominator: 1))
        if paced { clock.sleep(until: end) }
        chunk += 1
        return .audio(tone.samples(from: first, count: Self.chunkFrames), frames: Self.chunkFrames, pts: pts)
    }

    func stop() {}
}

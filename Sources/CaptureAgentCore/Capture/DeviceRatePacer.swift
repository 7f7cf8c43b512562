/// Paces an audio device that delivers faster than real time.
///
/// A sound card cannot hand out samples before they are recorded: over any stretch of time it
/// delivers at most that stretch's worth of audio plus what its buffer held when the stretch
/// began. Some PCMs have no clock at all. ALSA's `null` (the "no microphone" stand-in) and
/// some file or loopback plugins return a full period on every read at once. Read in the usual
/// blocking loop, such a device produces thousands of chunks a second. They flood the encoder
/// and steal the CPU the cameras need, and their sample count races ahead of the monotonic
/// clock.
///
/// The pacer is a sans-I/O state machine fed with each read's frame count and time. It
/// measures how far the audio read in the current window runs ahead of the clock. A real device
/// stays within its buffer; a crystal that is 1000 ppm fast gains only 10 ms per 10 s window.
/// Once the lead exceeds `tolerance`, the device has no clock of its own. From then on every
/// read returns a deadline: the end of the audio read so far, counted from where the window
/// began. The caller sleeps until that deadline before it stamps the chunk, so the device
/// delivers in real time, one period per period.
struct DeviceRatePacer: Sendable, Equatable {
    let sampleRate: Int
    /// How far ahead of the clock the audio may run before the device counts as unclocked.
    let tolerance: Int64
    /// The measuring window; it restarts so that slow drift never adds up to `tolerance`.
    let window: Int64

    private var windowStart: Int64?
    private var framesInWindow: Int64 = 0
    /// True once the device was found to have no clock; it stays paced from then on.
    private(set) var isPacing = false

    /// - Parameters:
    ///   - bufferFrames: the device's buffer size; a backlog of that much is normal after a
    ///     late wake-up.
    ///   - margin: added to the buffer's duration to give `tolerance`.
    init(sampleRate: Int, bufferFrames: Int, margin: Int64 = 250_000_000, window: Int64 = 10_000_000_000) {
        self.sampleRate = sampleRate
        self.window = window
        self.tolerance = nanoseconds(count: Int64(max(0, bufferFrames)), numerator: Int64(sampleRate), denominator: 1) + margin
    }

    /// Records a read of `frames` frames that returned at `now`. Returns the time to wait for
    /// before the chunk counts as captured, or nil when no wait is needed.
    mutating func afterReading(frames: Int, at now: Int64) -> Int64? {
        let chunk = Int64(max(0, frames))
        guard let start = windowStart else {
            // The first chunk ended when it was read, so its audio began one chunk earlier.
            windowStart = now - duration(chunk)
            framesInWindow = chunk
            return nil
        }
        framesInWindow += chunk
        let audioEnd = start + duration(framesInWindow)
        if isPacing {
            // Far behind (the process was stopped or starved): do not replay the whole gap
            // at full speed; move the origin up. The audio clock mapper sees the gap.
            if now - audioEnd > tolerance { windowStart = start + (now - audioEnd) }
            return audioEnd > now ? audioEnd : nil
        }
        if audioEnd - now > tolerance {
            isPacing = true
            return audioEnd
        }
        if now - start >= window {
            windowStart = now
            framesInWindow = 0
        }
        return nil
    }

    private func duration(_ frames: Int64) -> Int64 {
        nanoseconds(count: frames, numerator: Int64(sampleRate), denominator: 1)
    }
}

#if canImport(Glibc)
import Glibc
#endif
import CALSA

/// `alsa:DEVICE`: a microphone through libasound, S16_LE interleaved, 48 kHz, 1 or 2
/// channels, read in 960-frame (20 ms) periods. Timestamps come from the sample count,
/// anchored and drift-corrected on the monotonic clock by ``AudioClockMapper``.
final class ALSACaptureSource: CaptureSource {
    static let periodFrames = 960
    static let sampleRate = 48000
    /// The device buffer asked for (`snd_pcm_set_params` latency), microseconds.
    static let bufferMicroseconds: UInt32 = 500_000
    let name: String
    let isLive = true
    let format: SourceFormat
    private let device: String
    private let channels: Int
    private let clock: any MonotonicClock
    private var pcm: OpaquePointer?
    private var mapper = AudioClockMapper(sampleRate: ALSACaptureSource.sampleRate)
    private var pacer = DeviceRatePacer(sampleRate: ALSACaptureSource.sampleRate, bufferFrames: 0)
    private var lost = 0
    private var framesRead = 0
    private var notices: [String] = []
    /// Overruns recovered so far (each one is also reported as lost chunks).
    private(set) var overruns = 0

    /// Drift and correction so far, for logs.
    var clockMapper: AudioClockMapper { mapper }

    init(device: String, channels: Int = 1, clock: any MonotonicClock) {
        self.name = "alsa:\(device)"
        self.device = device
        self.channels = channels
        self.clock = clock
        self.format = .audio(sampleRate: Self.sampleRate, channels: channels)
    }

    deinit { stop() }

    func start() throws(CaptureError) {
        guard channels == 1 || channels == 2 else {
            throw CaptureError(.invalidInput, "\(name): \(channels) channels; mono or stereo only")
        }
        var handle: OpaquePointer?
        let openResult = snd_pcm_open(&handle, device, SND_PCM_STREAM_CAPTURE, 0)
        guard openResult >= 0, let handle else {
            throw CaptureError(.openFailed, "\(name): snd_pcm_open failed: \(Self.describe(openResult))")
        }
        // soft_resample = 1 lets alsa-lib convert when the hardware has no 48 kHz mode. The
        // agent records, it does not monitor: a buffer of up to half a second (the driver
        // may offer less) rides out a reader starved for a while without an overrun
        // (measured: 100 ms overran in an emulated VM on a loaded host).
        let setResult = snd_pcm_set_params(
            handle, SND_PCM_FORMAT_S16_LE, SND_PCM_ACCESS_RW_INTERLEAVED,
            UInt32(channels), UInt32(Self.sampleRate), 1, Self.bufferMicroseconds)
        guard setResult >= 0 else {
            snd_pcm_close(handle)
            throw CaptureError(.negotiationFailed, "\(name): S16_LE \(channels) ch 48000 Hz refused: \(Self.describe(setResult))")
        }
        var bufferFrames: snd_pcm_uframes_t = 0
        var periodFrames: snd_pcm_uframes_t = 0
        if snd_pcm_get_params(handle, &bufferFrames, &periodFrames) < 0 { bufferFrames = 0 }
        do {
            try Self.startOnFirstRead(handle, name: name)
        } catch {
            snd_pcm_close(handle)
            throw error
        }
        pcm = handle
        mapper = AudioClockMapper(sampleRate: Self.sampleRate)
        pacer = DeviceRatePacer(sampleRate: Self.sampleRate, bufferFrames: Int(bufferFrames))
    }

    /// Lets the first read start the stream.
    ///
    /// `snd_pcm_set_params` leaves the start threshold at the buffer size (24000 frames here),
    /// and a capture stream starts by itself only when one read asks for at least that many
    /// frames. Our 960-frame reads never do: on a real driver (snd-aloop, snd-dummy, USB) the
    /// stream stays PREPARED and the first read fails with EIO after the kernel's timeout.
    /// Plugins such as dsnoop and null start on their own, which hid this. The threshold is
    /// set to one frame, as arecord does. The stream is not started here: the encoder and the
    /// other devices are still to open, and the buffer would overrun meanwhile;
    /// ``beginCapture()`` starts it with the session's other sources.
    static func startOnFirstRead(_ handle: OpaquePointer, name: String) throws(CaptureError) {
        var sw: OpaquePointer?
        guard snd_pcm_sw_params_malloc(&sw) >= 0, let sw else {
            throw CaptureError(.negotiationFailed, "\(name): out of memory for software parameters")
        }
        defer { snd_pcm_sw_params_free(sw) }
        var result = snd_pcm_sw_params_current(handle, sw)
        if result >= 0 { result = snd_pcm_sw_params_set_start_threshold(handle, sw, 1) }
        if result >= 0 { result = snd_pcm_sw_params_set_avail_min(handle, sw, snd_pcm_uframes_t(periodFrames)) }
        if result >= 0 { result = snd_pcm_sw_params(handle, sw) }
        guard result >= 0 else {
            throw CaptureError(.negotiationFailed, "\(name): cannot set the start threshold: \(describe(result))")
        }
    }

    /// Starts the stream (it would otherwise start on the first read, see
    /// ``startOnFirstRead(_:name:)``), so that every microphone of a session starts at the
    /// same moment, and anchors the first chunk at that moment (``AudioClockMapper/begin(at:)``).
    func beginCapture() {
        guard let pcm, snd_pcm_state(pcm) == SND_PCM_STATE_PREPARED else { return }
        let instant = clock.now()
        // A refusal leaves the stream to start on the first read (start threshold one frame),
        // anchored from that read, and a real fault shows there, with its error.
        if snd_pcm_start(pcm) >= 0 { mapper.begin(at: instant) }
    }

    /// True once the device turned out to have no clock of its own and reads are paced by the
    /// monotonic clock instead (``DeviceRatePacer``).
    var isPacedByClock: Bool { pacer.isPacing }

    func read() throws(CaptureError) -> CapturedMedia? {
        guard let pcm else { return nil }
        var buffer = [Int16](repeating: 0, count: Self.periodFrames * channels)
        while true {
            let n = buffer.withUnsafeMutableBytes { snd_pcm_readi(pcm, $0.baseAddress, snd_pcm_uframes_t(Self.periodFrames)) }
            if n > 0 {
                var now = clock.now()
                let wasPacing = pacer.isPacing
                if let deadline = pacer.afterReading(frames: Int(n), at: now) {
                    clock.sleep(until: deadline)
                    now = clock.now()
                }
                if pacer.isPacing && !wasPacing {
                    notices.append("\(name) delivers audio faster than real time (a PCM without a clock, such as null); reads are now paced by the monotonic clock")
                }
                var delay: snd_pcm_sframes_t = 0
                if snd_pcm_delay(pcm, &delay) < 0 { delay = 0 }
                let frames = Int(n)
                framesRead += frames
                let stamp = mapper.stamp(frames: frames, delayFrames: Int(delay), now: now)
                // A re-anchor means time went missing: at least one chunk, or as many as the gap holds.
                if stamp.discontinuity { lost += max(1, stamp.lostChunks) }
                if frames < Self.periodFrames { buffer.removeSubrange((frames * channels)...) }
                return .audio(buffer, frames: frames, pts: stamp.pts)
            }
            let code = Int32(n)
            switch -code {
            case EAGAIN, EINTR:
                continue
            case EPIPE, ESTRPIPE:
                // Overrun (or suspend): samples were lost. Recover, then let the clock say
                // how much time went missing when the next chunk arrives.
                overruns += 1
                let r = snd_pcm_recover(pcm, code, 1)
                guard r >= 0 else {
                    throw CaptureError(.ioError(-r), "\(name): cannot recover from an overrun: \(Self.describe(r))")
                }
                mapper.resynchronize()
                continue
            case ENODEV:
                throw CaptureError(.deviceLost, "\(name): device disappeared (ENODEV)")
            default:
                throw CaptureError(.ioError(-code), "\(name): snd_pcm_readi failed: \(Self.describe(code))")
            }
        }
    }

    /// How far the device's clock drifted from the monotonic clock and what was done about it
    /// (docs/agent.md "Clock model"); the hardware bench reads it from the log.
    var closingSummary: String? {
        guard framesRead > 0 else { return nil }
        let seconds = Double(framesRead) / Double(Self.sampleRate)
        let ppm = Double(mapper.totalSlew) / (seconds * 1e9) * 1e6
        return "audio clock: \(framesRead) frames (\(Self.decimal(seconds, digits: 1)) s); "
            + "drift corrected by slewing \(Self.decimal(Double(mapper.totalSlew) / 1e6, digits: 2)) ms "
            + "(\(Self.decimal(ppm, digits: 1)) ppm, positive = device slower than the clock); "
            + "\(mapper.resyncCount) re-anchors, \(overruns) overruns"
    }

    static func decimal(_ value: Double, digits: Int) -> String {
        let scale = (0..<digits).reduce(1.0) { r, _ in r * 10 }
        let rounded = (value * scale).rounded() / scale
        return "\(rounded)"
    }

    func takeLostCount() -> Int {
        defer { lost = 0 }
        return lost
    }

    func takeNotices() -> [String] {
        defer { notices.removeAll() }
        return notices
    }

    func stop() {
        if let pcm {
            snd_pcm_drop(pcm)
            snd_pcm_close(pcm)
        }
        pcm = nil
    }

    static func describe(_ code: Int32) -> String {
        "\(String(cString: snd_strerror(code))) (\(code))"
    }
}

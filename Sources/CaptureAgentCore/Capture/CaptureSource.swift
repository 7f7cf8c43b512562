import MediaEncoding
import Shared

/// What a source produces, known once it has started (a camera reports what it granted).
enum SourceFormat: Sendable, Equatable, CustomStringConvertible {
    /// I420 pictures of a fixed size at a nominal rate of `fpsNumerator/fpsDenominator`.
    case video(width: Int, height: Int, fpsNumerator: Int, fpsDenominator: Int)
    /// Interleaved signed 16-bit PCM.
    case audio(sampleRate: Int, channels: Int)

    var kind: MediaKind {
        switch self {
        case .video: .video
        case .audio: .audio
        }
    }

    var isVideo: Bool { kind == .video }

    /// The nominal frame rate rounded to whole frames per second (what x264 is given).
    var roundedFPS: Int {
        guard case .video(_, _, let n, let d) = self, d > 0 else { return 0 }
        return max(1, Int((Double(n) / Double(d)).rounded()))
    }

    var description: String {
        switch self {
        case .video(let w, let h, let n, let d):
            let fps = d == 1 ? "\(n)" : "\(n)/\(d)"
            return "video \(w)x\(h) I420 @ \(fps) fps"
        case .audio(let rate, let channels):
            return "audio S16LE \(rate) Hz \(channels) ch"
        }
    }
}

/// One captured unit, stamped on CLOCK_MONOTONIC nanoseconds (see docs/agent.md "Clock model").
enum CapturedMedia: Sendable {
    /// A picture; `pts` is when it was captured.
    case video(I420Frame, pts: Int64)
    /// `frames` sample frames of interleaved PCM; `pts` is the time of the first one.
    case audio([Int16], frames: Int, pts: Int64)

    var pts: Int64 {
        switch self {
        case .video(_, let pts), .audio(_, _, let pts): pts
        }
    }
}

/// Why a source stopped or could not start. The message is for people; the code is for
/// callers that react differently (e.g. a lost device ends the track with an error).
struct CaptureError: Error, Sendable, Equatable, CustomStringConvertible {
    enum Code: Sendable, Equatable {
        /// The source specification or the file content is not acceptable.
        case invalidInput
        /// The device or file could not be opened.
        case openFailed
        /// The device does not do what is needed (no capture, no streaming, no I420).
        case unsupported
        /// Format negotiation failed.
        case negotiationFailed
        /// The device disappeared while capturing (ENODEV, e.g. unplugged).
        case deviceLost
        /// Any other I/O error while capturing; `errno` when there is one.
        case ioError(Int32)
        /// No data within the watchdog interval.
        case timeout
    }

    let code: Code
    let message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    var description: String { message }

    static func == (lhs: CaptureError, rhs: CaptureError) -> Bool { lhs.code == rhs.code }
}

/// A capture source: a camera, a microphone, a file or a synthetic generator.
///
/// Sources are pull-based and blocking: ``read()`` waits for the next frame (device,
/// or the injected clock for paced sources). Each one runs on its own thread
/// (``SourcePipeline``) so that blocking never touches the Swift concurrency pool or
/// the network event loop.
protocol CaptureSource: AnyObject {
    /// A short description for logs, e.g. `v4l2:/dev/video0`.
    var name: String { get }
    /// Live sources (cameras, microphones, real-time paced generators) cannot wait:
    /// when the encoder falls behind their frames are dropped at the source and
    /// reported. Non-live sources (files read as fast as possible) are simply slowed.
    var isLive: Bool { get }
    /// Opens the device/file and negotiates; after this ``format`` is final.
    func start() throws(CaptureError)
    /// The format produced (valid after ``start()``).
    var format: SourceFormat { get }
    /// Starts the device's clock now, if it starts on demand; called for every source of a
    /// session one after the other, just before their capture threads start. A source left
    /// to start on its own first read would start whenever its thread first runs, which on a
    /// starved CPU is tens of milliseconds apart from the others. Default: nothing.
    func beginCapture()
    /// The next unit, or nil at the end of the stream. Throws when the source fails.
    func read() throws(CaptureError) -> CapturedMedia?
    /// Capture units lost inside the source since the last call (a V4L2 sequence gap, an
    /// ALSA overrun), to be reported as capture drops. Resets the count.
    func takeLostCount() -> Int
    /// Things the operator should hear about once (for example, a device found to have no
    /// clock of its own), since the last call. Resets the list.
    func takeNotices() -> [String]
    /// One line for the log when the source ends (for example, how much clock drift an
    /// audio device showed and how it was corrected); nil when there is nothing to say.
    var closingSummary: String? { get }
    /// Stops capturing and releases the device; safe to call more than once.
    func stop()
}

extension CaptureSource {
    func beginCapture() {}
    func takeLostCount() -> Int { 0 }
    func takeNotices() -> [String] { [] }
    var closingSummary: String? { nil }
}

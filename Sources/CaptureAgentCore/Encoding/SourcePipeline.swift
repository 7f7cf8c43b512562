import Foundation
import Logging
import MediaEncoding
import WireProtocol

/// Receives what a pipeline produces, from the pipeline's encoder thread, in order.
protocol PipelineSink: AnyObject, Sendable {
    /// Samples went missing right before the next produced sample of `track`.
    func pipelineDropped(track: UInt8, count: Int, reason: DropReport.Reason)
    func pipelineProduced(_ sample: EncodedSample)
    /// The track is over; nothing more will come from this pipeline.
    func pipelineEnded(track: UInt8, reason: TrackEnd.Reason, message: String)
}

/// One source → bounded queue → one encoder, each stage on its own thread.
///
/// The capture thread only reads and hands off, so a slow encoder never delays a
/// device read: when the queue is full, a live source's frame is dropped right there,
/// counted, and reported (`DropReport` reason `encoderError`: the encoder skipped it)
/// before the next frame that gets through — loss is never silent. Frames the source
/// itself lost are reported with reason `captureError`.
final class SourcePipeline: @unchecked Sendable {
    let track: UInt8
    let label: String
    let source: any CaptureSource
    let encoder: any SampleEncoder
    private let queue: DropAtSourceQueue<CapturedMedia>
    private weak var sink: (any PipelineSink)?
    private let logger: Logger
    private let lock = NSLock()
    private var stopRequested = false
    private var stopInstant: Int64?
    /// A live source's units before this instant are not recorded (a start the server
    /// scheduled, protocol.md §6.16): every track of a session across agents starts there.
    private let startInstant: Int64?
    private var keyframeWanted = false
    private var captureFailure: CaptureError?
    private let finished = DispatchGroup()
    private let clock: any MonotonicClock
    /// Encoder-thread only: drop warnings are summed, at most one line per kind per 5 s.
    private var overflowLog = LogThrottle()
    private var lostLog = LogThrottle()

    /// - Parameters:
    ///   - source: already started (its format is final).
    ///   - queueCapacity: units between capture and encoder.
    init(track: UInt8, label: String, source: any CaptureSource, encoder: any SampleEncoder,
                queueCapacity: Int, sink: any PipelineSink, logger: Logger,
                clock: any MonotonicClock = SystemMonotonicClock(), startAt: Int64? = nil) {
        self.startInstant = startAt
        self.track = track
        self.label = label
        self.source = source
        self.encoder = encoder
        self.queue = DropAtSourceQueue(capacity: queueCapacity)
        self.sink = sink
        self.logger = logger
        self.clock = clock
    }

    /// The track descriptor of this pipeline (protocol.md §6.6.1).
    var trackDescriptor: TrackDescriptor {
        TrackDescriptor(id: track, label: label, timescale: encoder.timescale, format: encoder.mediaFormat)
    }

    /// Units dropped because the encoder was behind, and units the source lost.
    var dropCounts: (overflow: Int, lost: Int) { (queue.totalDropped, queue.totalLost) }

    /// Starts the capture and encoder threads.
    func run() {
        finished.enter()
        finished.enter()
        let capture = Thread { [self] in captureLoop(); finished.leave() }
        capture.name = "capture-\(label)"
        let encode = Thread { [self] in encodeLoop(); finished.leave() }
        encode.name = "encode-\(label)"
        capture.start()
        encode.start()
    }

    /// Asks the source to stop; queued frames are still encoded, then the track ends
    /// (end of stream).
    ///
    /// With `instant` (the clock when the recording stops), a live source goes on reading
    /// until its units reach that instant, and the first unit at or past it is not recorded:
    /// every track of the session then ends at the same moment, within one unit (20 ms of
    /// audio, one frame), whatever each capture thread was doing when the stop came. Without
    /// it (a cancel) the source stops after the read in progress.
    func stop(at instant: Int64? = nil) {
        lock.lock()
        stopRequested = true
        stopInstant = instant
        lock.unlock()
        if !source.isLive { queue.cancel() }
    }

    /// How long past the stop instant a live source may take to deliver a unit that reaches
    /// it before it is stopped anyway (a device that went quiet must not hold the stop up).
    static let stopGrace: Int64 = 1_000_000_000

    /// Blocks until both threads are done.
    func waitUntilFinished() { finished.wait() }

    /// Blocks until both threads are done or `deadline` passes; whether they are done.
    @discardableResult
    func waitUntilFinished(deadline: DispatchTime) -> Bool { finished.wait(timeout: deadline) == .success }

    /// Whether both threads are done (true too before ``run()``).
    var isFinished: Bool { finished.wait(timeout: .now()) == .success }

    /// The next picture will be encoded as a keyframe (called from any thread).
    func requestKeyframe() {
        lock.lock()
        keyframeWanted = true
        lock.unlock()
    }

    private var stopState: (requested: Bool, instant: Int64?) {
        lock.lock()
        defer { lock.unlock() }
        return (stopRequested, stopInstant)
    }

    private var shouldStop: Bool { stopState.requested }

    /// True when the capture loop is done before reading another unit: a stop without an
    /// instant (or for a file read as fast as possible), or one whose grace has passed.
    private var stopsBeforeReading: Bool {
        let stop = stopState
        guard stop.requested else { return false }
        guard let instant = stop.instant, source.isLive else { return true }
        let (limit, overflow) = instant.addingReportingOverflow(Self.stopGrace)
        return clock.now() > (overflow ? .max : limit)
    }

    private func captureLoop() {
        while !stopsBeforeReading {
            do {
                guard let media = try source.read() else { break }
                // The unit that reaches the stop instant ends the track; it is not recorded.
                if let instant = stopState.instant, source.isLive, media.pts >= instant {
                    queue.recordLost(source.takeLostCount())
                    break
                }
                queue.recordLost(source.takeLostCount())
                if let start = startInstant, source.isLive, media.pts < start { continue }
                for notice in source.takeNotices() {
                    logger.warning("\(notice)", metadata: ["track": "\(label)", "source": "\(source.name)"])
                }
                if source.isLive {
                    if !queue.offer(media) && !shouldStop {
                        logger.debug("encoder behind: frame dropped at the source", metadata: ["track": "\(label)"])
                    }
                } else {
                    queue.put(media)
                }
            } catch {
                queue.recordLost(source.takeLostCount())
                lock.lock()
                captureFailure = error
                lock.unlock()
                logger.error("capture failed: \(error)", metadata: ["track": "\(label)", "source": "\(source.name)"])
                break
            }
        }
        if let summary = source.closingSummary {
            logger.notice("\(summary)", metadata: ["track": "\(label)", "source": "\(source.name)"])
        }
        source.stop()
        queue.close()
    }

    private func encodeLoop() {
        while true {
            switch queue.take() {
            case .element(let media, let drops):
                report(drops)
                if !drops.isEmpty { encoder.inputDiscontinuity() }
                lock.lock()
                let wantKeyframe = keyframeWanted
                keyframeWanted = false
                lock.unlock()
                if wantKeyframe { encoder.requestKeyframe() }
                do {
                    for sample in try encoder.encode(media) { sink?.pipelineProduced(sample) }
                } catch {
                    logger.error("encoder failed on one unit: \(error)", metadata: ["track": "\(label)"])
                    sink?.pipelineDropped(track: track, count: 1, reason: .encoderError)
                }
            case .end(let drops):
                do {
                    for sample in try encoder.flush() { sink?.pipelineProduced(sample) }
                } catch {
                    logger.error("encoder flush failed: \(error)", metadata: ["track": "\(label)"])
                }
                report(drops)
                logPendingDrops()
                lock.lock()
                let failure = captureFailure
                lock.unlock()
                if let failure {
                    sink?.pipelineEnded(track: track, reason: .error, message: failure.message)
                } else {
                    sink?.pipelineEnded(track: track, reason: .endOfStream, message: "")
                }
                return
            }
        }
    }

    private func report(_ drops: DropAtSourceQueue<CapturedMedia>.Drops) {
        guard !drops.isEmpty else { return }
        let now = clock.now()
        if drops.overflow > 0 {
            sink?.pipelineDropped(track: track, count: drops.overflow, reason: .encoderError)
            if let total = overflowLog.record(drops.overflow, at: now) { logOverflow(total) }
        }
        if drops.lost > 0 {
            sink?.pipelineDropped(track: track, count: drops.lost, reason: .captureError)
            if let total = lostLog.record(drops.lost, at: now) { logLost(total) }
        }
    }

    /// At the end of the track: the drops counted since the last warning.
    private func logPendingDrops() {
        if let total = overflowLog.flush() { logOverflow(total) }
        if let total = lostLog.flush() { logLost(total) }
    }

    private func logOverflow(_ total: Int) {
        logger.warning("dropped \(total) unit(s) at the source: the encoder could not keep up", metadata: ["track": "\(label)"])
    }

    private func logLost(_ total: Int) {
        logger.warning("source lost \(total) unit(s)", metadata: ["track": "\(label)", "source": "\(source.name)"])
    }
}

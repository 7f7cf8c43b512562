import DequeModule
import NIOCore
import WireProtocol

/// Everything of one session the server has not acknowledged yet, bounded by bytes and
/// by the time span it covers (protocol.md §7.3).
///
/// Two parts, in stream order:
/// * the **log**: samples that have a sequence number (they were sent, possibly on a
///   connection that has since died) and `TrackEnd`s. Nothing leaves it until an
///   acknowledgement that frees it (``AckEffect/free``: an `Ack`, or with the `remoteAcks`
///   capability only a `RemoteAck`, protocol.md §6.13a); after a resume everything above
///   the server's acknowledged point is sent again, byte for byte.
/// * the **pending** queue: samples not sent yet (no sequence number), `TrackEnd`s, and
///   drop markers.
///
/// When a bound is exceeded the **oldest pending sample** is dropped: it has no
/// sequence number yet, so the sequence stays gap-free (the server would reject a gap)
/// and samples the server may already hold are never lost. The drop becomes a
/// `DropReport` (reason `queueOverflow`) at its place in the stream, and the next sample
/// of the track carries the discontinuity flag. After a video sample is dropped, the
/// track's following non-keyframes cannot be decoded, so they are dropped (and
/// reported) too until the next keyframe, which the caller is asked to force.
public struct ResendBuffer: Sendable {
    /// The configurable bounds.
    public struct Limits: Sendable, Equatable {
        /// Bytes of sample data (plus the 34-byte sample header) kept.
        var maxBytes: Int
        /// Nanoseconds between the oldest and the newest kept sample.
        var maxDuration: Int64

        public init(maxBytes: Int = 512 * 1024 * 1024, maxDuration: Int64 = 300_000_000_000) {
            self.maxBytes = maxBytes
            self.maxDuration = maxDuration
        }
    }

    /// A message ready to send.
    enum Outgoing: Sendable, Equatable {
        case sample(Sample)
        case trackEnd(TrackEnd)
        case dropReport(DropReport)

        var message: Message {
            switch self {
            case .sample(let s): .sample(s)
            case .trackEnd(let t): .trackEnd(t)
            case .dropReport(let d): .dropReport(d)
            }
        }
    }

    /// What appending a sample caused.
    struct AppendResult: Sendable, Equatable {
        /// Samples dropped to stay within the limits, per track.
        var dropped: [UInt8: Int] = [:]
        /// Video tracks whose encoder should produce a keyframe now.
        var keyframeRequests: Set<UInt8> = []
        var droppedAny: Bool { !dropped.isEmpty }
    }

    /// What an acknowledgement lets the buffer do with the samples it covers.
    enum AckEffect: Sendable, Equatable {
        /// Durable on the server's host only (`Ack` with `remoteAcks` negotiated): the point is
        /// remembered for the next `SessionResume`, the samples are kept, because another
        /// server taking the session over may have less than this host had (§6.13a).
        case keep
        /// Durable where any server of the fleet can read it (`RemoteAck`), or the only level
        /// there is (`Ack` without `remoteAcks`): the samples are freed.
        case free
    }

    private enum LogEntry: Sendable {
        case sample(Sample)
        /// `after` = the last sequence number assigned when the track ended.
        case trackEnd(TrackEnd, after: UInt64)
    }

    private enum PendingEntry: Sendable {
        case sample(EncodedSample)
        case trackEnd(TrackEnd)
        case drop(track: UInt8, reason: DropReport.Reason, count: Int)
    }

    let limits: Limits
    private let videoTracks: Set<UInt8>
    /// Sent and not yet acknowledged, oldest first; acknowledged entries leave from the front.
    private var log = Deque<LogEntry>()
    /// The next log entry to (re)send: `log.count` when everything in the log was sent.
    private var cursor = 0
    private var pending = Deque<PendingEntry>()
    private var discontinuity: Set<UInt8> = []
    private var awaitingKeyframe: Set<UInt8> = []
    private var newestPTS: Int64?

    /// Highest sequence number the server acknowledged (at either level): the
    /// `lastAcknowledged` of the next `SessionResume`. Never goes back.
    public private(set) var acknowledged: UInt64 = 0
    /// Highest sequence number freed (everything through it has left the log): the last
    /// `RemoteAck` with `remoteAcks`, else the same as ``acknowledged``. Never above it.
    public private(set) var freedThrough: UInt64 = 0
    /// Last sequence number assigned (0 = none yet). `SessionClose.finalSequence`.
    private(set) var lastSequence: UInt64 = 0
    /// Bytes currently held (samples of log and pending, with their headers).
    private(set) var byteCount = 0
    /// Samples dropped because of the limits, over the whole session.
    private(set) var overflowDrops = 0

    init(limits: Limits, videoTracks: Set<UInt8> = []) {
        self.limits = limits
        self.videoTracks = videoTracks
    }

    /// Samples held with a sequence number, awaiting the acknowledgement that frees them
    /// (with `remoteAcks`: samples the server's host has acknowledged count until their `RemoteAck`).
    public var unacknowledgedCount: Int {
        log.reduce(0) { n, e in if case .sample = e { n + 1 } else { n } }
    }

    /// Samples not sent yet.
    var pendingSampleCount: Int {
        pending.reduce(0) { n, e in if case .sample = e { n + 1 } else { n } }
    }

    /// Something is waiting to be (re)sent.
    var hasOutgoing: Bool { cursor < log.count || !pending.isEmpty }

    /// Everything was sent and freed: nothing held, nothing pending. For tests and logs only:
    /// the session ends on `SessionClosed`, never on this, because with `remoteAcks` the
    /// last samples are freed only by the `RemoteAck` that comes just before it (§6.13a).
    var isDrained: Bool { !hasOutgoing && freedThrough == lastSequence }

    // MARK: Input

    /// Adds a new sample (not yet sent) and enforces the limits.
    mutating func append(_ sample: EncodedSample) -> AppendResult {
        pending.append(.sample(sample))
        byteCount += Self.size(sample.data)
        newestPTS = max(newestPTS ?? sample.pts, sample.pts)
        var result = AppendResult()
        while isOverLimits, let index = oldestPendingSampleIndex() {
            guard case .sample(let victim) = pending[index] else { break }
            dropPending(at: index, victim, into: &result)
        }
        return result
    }

    /// Records samples dropped before they reached the buffer (at the source, by the
    /// encoder); they are reported at this point of the stream.
    mutating func recordDrop(track: UInt8, reason: DropReport.Reason, count: Int) {
        guard count > 0 else { return }
        appendDropMarker(track: track, reason: reason, count: count)
    }

    /// The track has ended; queued after its last sample.
    mutating func endTrack(_ end: TrackEnd) {
        pending.append(.trackEnd(end))
    }

    // MARK: Output

    /// The next message to send: first anything being resent, then pending entries (a
    /// pending sample gets the next sequence number here and moves into the log).
    mutating func nextOutgoing() -> Outgoing? {
        if cursor < log.count {
            let entry = log[cursor]
            cursor += 1
            switch entry {
            case .sample(let s): return .sample(s)
            case .trackEnd(let t, _): return .trackEnd(t)
            }
        }
        while let first = pending.first {
            if case .sample(let encoded) = first, awaitingKeyframe.contains(encoded.track), !encoded.isKeyframe {
                dropUntilKeyframe(track: encoded.track)
            }
            let entry = pending.removeFirst()
            switch entry {
            case .drop(let track, let reason, let count):
                guard count > 0 else { continue }  // absorbed into an earlier report
                discontinuity.insert(track)
                return .dropReport(DropReport(track: track, reason: reason, count: UInt32(clamping: count)))
            case .trackEnd(let end):
                log.append(.trackEnd(end, after: lastSequence))
                cursor = log.count
                return .trackEnd(end)
            case .sample(let encoded):
                awaitingKeyframe.remove(encoded.track)
                lastSequence += 1
                var flags: Sample.Flags = encoded.isKeyframe ? [.keyframe] : []
                if discontinuity.remove(encoded.track) != nil { flags.insert(.discontinuity) }
                let sample = Sample(track: encoded.track, flags: flags, sequence: lastSequence, pts: encoded.pts,
                                    dts: encoded.dts, duration: encoded.duration, data: encoded.data)
                log.append(.sample(sample))
                cursor = log.count
                return .sample(sample)
            }
        }
        return nil
    }

    /// A video track lost a sample: its pending non-keyframes up to the next keyframe
    /// cannot be decoded. They become one drop report at the first one's place (the
    /// others turn into empty markers, skipped when reached).
    private mutating func dropUntilKeyframe(track: UInt8) {
        var count = 0
        for i in pending.indices {
            if case .sample(let s) = pending[i], s.track == track {
                if s.isKeyframe { break }
                byteCount -= Self.size(s.data)
                overflowDrops += 1
                count += 1
                pending[i] = .drop(track: track, reason: .queueOverflow, count: 0)
            }
        }
        pending[0] = .drop(track: track, reason: .queueOverflow, count: count)
    }

    // MARK: Acknowledgement and resume

    /// The server made everything up to `sequence` durable; `effect` says whether that frees it.
    /// Acks never go back, and never pass what was sent.
    mutating func acknowledge(_ sequence: UInt64, _ effect: AckEffect = .free) {
        let sequence = min(sequence, lastSequence)
        acknowledged = max(acknowledged, sequence)
        if effect == .free { free(through: sequence) }
    }

    /// What a resume found.
    enum ResumeOutcome: Sendable, Equatable {
        /// Everything above the server's point is held and will be sent again.
        case resending
        /// The server's point is below what was freed already: samples `missing` cannot be
        /// sent again, and the server will refuse the gap (§6.7).
        case gap(missing: ClosedRange<UInt64>)
    }

    /// After `SessionAccepted(acknowledged:)` on a new connection: records the server's point
    /// (freeing through it with ``AckEffect/free``) and rewinds so that everything after it is
    /// sent again, in order, each `TrackEnd` at its place. The point may lie below
    /// ``acknowledged`` (another server took the session over, §6.13a): what lies between is
    /// still held unless it was freed.
    @discardableResult
    mutating func resume(from serverAcknowledged: UInt64, _ effect: AckEffect = .free) -> ResumeOutcome {
        acknowledge(serverAcknowledged, effect)
        let point = min(serverAcknowledged, lastSequence)
        if point < freedThrough {
            cursor = 0
            return .gap(missing: point + 1 ... freedThrough)
        }
        // The first entry the server lacks: a sample above its point, or a TrackEnd sent after
        // its last sample (a TrackEnd followed by a sample it has arrived before that sample).
        cursor = log.firstIndex { entry in
            switch entry {
            case .sample(let s): s.sequence > point
            case .trackEnd(_, let after): after >= point
            }
        } ?? log.count
        return .resending
    }

    /// Removes everything through `sequence` from the front of the log.
    private mutating func free(through sequence: UInt64) {
        guard sequence > freedThrough else { return }
        freedThrough = sequence
        while let first = log.first {
            switch first {
            case .sample(let s) where s.sequence <= sequence:
                byteCount -= Self.size(s.data)
            case .trackEnd(_, let after) where after < sequence:
                // A later sample was acknowledged, so this TrackEnd, sent before it on an
                // ordered stream, has arrived too.
                break
            default:
                return
            }
            log.removeFirst()
            cursor = max(0, cursor - 1)
        }
    }

    // MARK: Internals

    private var oldestPTS: Int64? {
        for entry in log { if case .sample(let s) = entry { return s.pts } }
        for entry in pending { if case .sample(let s) = entry { return s.pts } }
        return nil
    }

    private var isOverLimits: Bool {
        if byteCount > limits.maxBytes { return true }
        if let newest = newestPTS, let oldest = oldestPTS, newest - oldest > limits.maxDuration { return true }
        return false
    }

    private func oldestPendingSampleIndex() -> Int? {
        pending.firstIndex { if case .sample = $0 { true } else { false } }
    }

    private mutating func dropPending(at index: Int, _ victim: EncodedSample, into result: inout AppendResult) {
        byteCount -= Self.size(victim.data)
        overflowDrops += 1
        result.dropped[victim.track, default: 0] += 1
        // Merge with a marker just before it for the same track, so a burst of drops is one report.
        if index > 0, case .drop(let t, .queueOverflow, let n) = pending[index - 1], t == victim.track {
            pending[index - 1] = .drop(track: t, reason: .queueOverflow, count: n + 1)
            pending.remove(at: index)
        } else {
            pending[index] = .drop(track: victim.track, reason: .queueOverflow, count: 1)
        }
        if videoTracks.contains(victim.track) {
            awaitingKeyframe.insert(victim.track)
            result.keyframeRequests.insert(victim.track)
        }
    }

    private mutating func appendDropMarker(track: UInt8, reason: DropReport.Reason, count: Int) {
        if let last = pending.last, case .drop(let t, let r, let n) = last, t == track, r == reason {
            pending[pending.count - 1] = .drop(track: t, reason: r, count: n + count)
        } else {
            pending.append(.drop(track: track, reason: reason, count: count))
        }
    }

    static func size(_ data: ByteBuffer) -> Int { data.readableBytes + Sample.headerSize }
}

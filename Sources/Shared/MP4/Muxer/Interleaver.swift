import DequeModule

/// Merges N per-track queues into one stream ordered by decode time (the seed design's
/// per-media queues, generalised). A sample is released only when no other track can
/// still deliver something earlier — unless that track has been silent for `stallTimeout`
/// of media time, in which case it is declared stalled and stops holding the others back.
/// Pure value: no clocks, no I/O; media time is the only time it knows.
struct Interleaver {
    enum Event: Equatable {
        case stalled(trackIndex: Int, lastDTS: Int64?)
        case resumed(trackIndex: Int)
    }

    private struct TrackQueue {
        /// A ring buffer: a popped sample leaves it (and releases its payload) at once, in O(1).
        private(set) var samples = Deque<PreparedSample>()
        /// The queued samples' decode times, in the same order: every release compares the
        /// queues' first ones, and reading one from `samples` would copy the whole sample
        /// (a retain and a release of its payload) each time.
        private(set) var decodeTimes = Deque<Int64>()
        private(set) var queuedBytes = 0
        var lastDTSReceived: Int64?
        var ended = false
        var stalled = false

        var isEmpty: Bool { decodeTimes.isEmpty }
        var firstDTS: Int64? { decodeTimes.first }

        mutating func push(_ sample: PreparedSample) {
            samples.append(sample)
            decodeTimes.append(sample.dts)
            queuedBytes += sample.payload.count
        }

        mutating func pop() -> PreparedSample {
            decodeTimes.removeFirst()
            let s = samples.removeFirst()
            queuedBytes -= s.payload.count
            return s
        }
    }

    private var queues: [TrackQueue]
    private var earliestDTSSeen: Int64?
    private var newestDTSReceived = Int64.min
    let stallTimeout: Int64
    let maxQueuedBytes: Int
    private(set) var events: [Event] = []

    init(trackCount: Int, stallTimeout: Int64, maxQueuedBytes: Int) {
        queues = Array(repeating: TrackQueue(), count: trackCount)
        self.stallTimeout = stallTimeout
        self.maxQueuedBytes = maxQueuedBytes
    }

    var queuedSampleCount: Int { queues.reduce(0) { $0 + $1.samples.count } }
    var queuedBytes: Int { queues.reduce(0) { $0 + $1.queuedBytes } }
    /// Payload bytes the queues still reference, released samples included if they were kept
    /// (for tests: it must equal `queuedBytes`).
    var referencedPayloadBytes: Int { queues.reduce(0) { $0 + $1.samples.reduce(0) { $0 + $1.payload.count } } }

    mutating func push(_ sample: PreparedSample) {
        let t = sample.trackIndex
        if queues[t].stalled {
            queues[t].stalled = false
            events.append(.resumed(trackIndex: t))
        }
        // Mutated in place: copying `queues[t]` out and back would copy the whole queue.
        queues[t].push(sample)
        queues[t].lastDTSReceived = sample.dts
        earliestDTSSeen = min(earliestDTSSeen ?? sample.dts, sample.dts)
        newestDTSReceived = max(newestDTSReceived, sample.dts)
    }

    /// No more samples will come for this track: it no longer holds the others back.
    mutating func endTrack(_ index: Int) { queues[index].ended = true }

    mutating func takeEvents() -> [Event] {
        defer { events.removeAll() }
        return events
    }

    /// The next sample in decode order, if it may be released now.
    mutating func next() -> PreparedSample? {
        guard let candidate = headWithSmallestDTS() else { return nil }
        guard let dts = queues[candidate].firstDTS else { return nil }
        let forced = queues[candidate].queuedBytes > maxQueuedBytes
        // Over the memory bound the head goes regardless, one sample at a time; that alone is
        // not a stall (the silent track may still be within its timeout).
        for i in queues.indices where i != candidate && queues[i].isEmpty && !queues[i].ended && !forced {
            if !mayPass(emptyTrack: i, candidateDTS: dts) { return nil }
        }
        return queues[candidate].pop()
    }

    /// Everything still queued, in decode order (end of recording).
    mutating func drain() -> [PreparedSample] {
        var out: [PreparedSample] = []
        while let i = headWithSmallestDTS() { out.append(queues[i].pop()) }
        return out
    }

    private func headWithSmallestDTS() -> Int? {
        var best: Int?
        var bestDTS = Int64.max
        for i in queues.indices {
            if let dts = queues[i].firstDTS, dts < bestDTS {
                best = i
                bestDTS = dts
            }
        }
        return best
    }

    /// Whether an empty track can no longer deliver anything that should precede `candidateDTS`.
    private mutating func mayPass(emptyTrack i: Int, candidateDTS: Int64) -> Bool {
        if queues[i].stalled { return true }
        // Its next sample's DTS will exceed its last one, so anything at or before that is safe.
        if let last = queues[i].lastDTSReceived, candidateDTS <= last { return true }
        // Stalled once the other tracks have moved on by more than the timeout. Measured
        // against the newest DTS received anywhere, not the held candidate: the candidate
        // stops advancing precisely while it waits.
        let reference = queues[i].lastDTSReceived ?? earliestDTSSeen ?? candidateDTS
        guard TimeScaling.difference(newestDTSReceived, reference) > stallTimeout else { return false }
        queues[i].stalled = true
        events.append(.stalled(trackIndex: i, lastDTS: queues[i].lastDTSReceived))
        return true
    }
}

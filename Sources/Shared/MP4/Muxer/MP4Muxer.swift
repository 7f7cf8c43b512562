/// The N-track recorder: the seed design's status machine, per-track queues and DTS
/// interleaving, writing crash-safe fragmented MP4 that becomes a regular MP4 on `finish()`.
///
/// Not thread-safe by design: one owner (a session actor on the server) drives it.
/// - Misuse (unknown track, DTS going backwards, oversized sample, codec change, …) throws a
///   typed error for that call only; the recording continues and nothing written is lost.
/// - An I/O error (a full disk) moves it to `.failed`; what was written stays recoverable.
/// - `cancel()` deletes the output, as the seed's `cancelWriting` does.
public final class MP4Muxer {
    public enum Status: String, Sendable {
        case idle, running, completed, failed, cancelled
        /// Stopped without finalizing, for a later ``resume(configuration:)`` (graceful server restart).
        case suspended
    }

    public let configuration: MuxerConfiguration
    public private(set) var status: Status = .idle
    public private(set) var failure: MuxerError?

    private let tracks: [PreparedTrack]
    private let trackIndexByID: [UInt32: Int]
    private let primaryTrack: Int
    private var interleaver: Interleaver
    private var ledger = SequenceLedger()
    private var lastDTS: [Int64?]
    private var ended: [Bool]
    private var stalled: Set<UInt32> = []
    private var everStalled: Set<UInt32> = []

    private var current: SegmentWriter?
    private var draining: SegmentWriter?
    private var switched: [Bool] = []
    private var split: (pts: Int64, dts: Int64)?
    private var splitRequested = false
    private var sessionOrigin: Int64?
    /// The dts every later one must stay near (``MuxerTimestampBounds/maxRecordingSpan``): the
    /// first appended, or after a resume the reopened file's decode origin.
    private var timeReference: Int64?
    private var completed: [SegmentSummary] = []
    private var allPaths: [String] = []
    /// Under `.fsyncWhenAsked`: fragments written but not yet reported durable, oldest first,
    /// and files split off whose finalization waits for ``syncWrittenFragments()``.
    private var unsynced: [WrittenFragment] = []
    private var awaitingFinalization: [SegmentWriter] = []

    /// A fragment on disk whose fsync has not been asked for yet.
    private struct WrittenFragment {
        var report: FragmentReport
        var sequences: [UInt64]
    }

    /// Longest a track may keep feeding the previous segment after a split while waiting for
    /// its own keyframe, before it is moved over anyway.
    static let segmentDrainLimit: Int64 = 10_000_000_000

    /// Payload bytes accepted but not yet durable: waiting in the interleaver or in an open
    /// fragment. What a crash would cost right now (and the server's queue gauge).
    public var bufferedPayloadBytes: Int {
        interleaver.queuedBytes + (current?.pendingBytes ?? 0) + (draining?.pendingBytes ?? 0)
    }

    public init(configuration: MuxerConfiguration) throws(MuxerError) {
        guard !configuration.tracks.isEmpty else { throw MuxerError(.invalidConfiguration, "a recording needs at least one track") }
        guard Set(configuration.tracks.map(\.id)).count == configuration.tracks.count else {
            throw MuxerError(.invalidConfiguration, "track ids must be unique")
        }
        let intervals = 1...MuxerTimestampBounds.maxConfiguredInterval
        guard intervals.contains(configuration.fragmentDuration), intervals.contains(configuration.stallTimeout) else {
            throw MuxerError(.invalidConfiguration, "fragment duration and stall timeout must be positive and at most 2^40 ns")
        }
        guard configuration.maxSegmentDuration.map(intervals.contains) ?? true, (configuration.maxSegmentBytes ?? 1) > 0,
              configuration.maxSampleSize > 0, configuration.maxQueuedBytesPerTrack > 0 else {
            throw MuxerError(.invalidConfiguration, "segment limits, sample size and queue limits must be positive (durations at most 2^40 ns)")
        }
        var prepared: [PreparedTrack] = []
        for t in configuration.tracks { prepared.append(try PreparedTrack(t)) }
        self.configuration = configuration
        tracks = prepared
        trackIndexByID = Dictionary(uniqueKeysWithValues: prepared.enumerated().map { ($1.id, $0) })
        primaryTrack = prepared.firstIndex(where: \.isVideo) ?? 0
        interleaver = Interleaver(trackCount: prepared.count, stallTimeout: configuration.stallTimeout,
                                  maxQueuedBytes: configuration.maxQueuedBytesPerTrack)
        lastDTS = Array(repeating: nil, count: prepared.count)
        ended = Array(repeating: false, count: prepared.count)
    }

    /// The bytes every file starts with while it records (its `ftyp` and the placeholder that
    /// finalizing in place turns into the `mdat` header): with them in front, a file's bytes up
    /// to a fragment's ``FragmentReport/fileEnd``, read before or after it was finalized, are
    /// the fragmented file a resume continues.
    public static var fragmentedFileHead: [UInt8] { SegmentWriter.fragmentedHead }

    public struct ResumeReport: Sendable, Equatable {
        /// The file recording continues in.
        public var path: String
        public var segmentIndex: Int
        public var samplesInFile: Int
        /// The ack point recorded with the last durable fragment: the agent resends after it.
        /// Lane 0's (``durable`` has every lane's).
        public var durableThroughSequence: UInt64 { durable.lane0 }
        /// Each lane's ack point (``SequenceLane``).
        public var durable: DurablePoints
        /// Bytes of a torn last fragment that were cut away.
        public var bytesDiscarded: UInt64
        /// Where its last complete fragment ends: the file's size once the torn tail is cut.
        public var fileEnd: UInt64 = 0
        /// Earlier segment files that had to be finalized on the way.
        public var recoveredSegments: [String]
    }

    /// Continues a recording whose process died: reopens its newest file, keeps every complete
    /// fragment, and goes on appending to the SAME file. Earlier segments still unfinished are
    /// finalized. Samples resent by the agent that the file already holds are ignored.
    public static func resume(configuration: MuxerConfiguration) throws(MuxerError) -> (MP4Muxer, ResumeReport) {
        let muxer = try MP4Muxer(configuration: configuration)
        var last = 0
        if configuration.isSegmented {
            while RandomAccessFile.exists(configuration.path(forSegment: last + 1)) { last += 1 }
        }
        var recovered: [String] = []
        for k in 0..<last {
            let path = configuration.path(forSegment: k)
            if try !MP4Recovery.recover(path: path).alreadyFinalized { recovered.append(path) }
            muxer.allPaths.append(path)
        }
        let (writer, reopened) = try SegmentWriter.reopen(index: last, tracks: muxer.tracks, configuration: configuration)
        var state = reopened
        muxer.sessionOrigin = writer.info?.sessionOriginNanos
        muxer.timeReference = writer.decodeOrigin
        if !writer.hasFragments, last > 0 {
            // The newest file was opened at a split and the server stopped before its first
            // fragment: it knows nothing of the session. The file before it does — its ack
            // point, the samples it holds past that point, the tracks' last decode times and
            // the session's time zero — and the newest file goes on from there. (Read as if
            // the newest file were empty, the ack point fell to 0: the agent's resent samples
            // then looked like a gap, and the session ended.)
            let (earlier, info) = try SegmentWriter.finishedState(path: configuration.path(forSegment: last - 1), tracks: muxer.tracks)
            state.sequences = earlier.sequences.filter(earlier.durable.isAbove)
            state.durable = earlier.durable
            state.lastDTS = earlier.lastDTS
            muxer.sessionOrigin = info.sessionOriginNanos
            muxer.timeReference = info.decodeOriginNanos
            writer.sessionOrigin = info.sessionOriginNanos
        }
        muxer.current = writer
        muxer.allPaths.append(writer.path)
        muxer.lastDTS = state.lastDTS
        muxer.ledger = SequenceLedger(resumingAt: state.durable, alreadyHeld: state.sequences)
        muxer.status = .running
        return (muxer, ResumeReport(path: writer.path, segmentIndex: last, samplesInFile: writer.sampleCount,
                                    durable: state.durable, bytesDiscarded: state.bytesDiscarded, fileEnd: writer.fileSize,
                                    recoveredSegments: recovered))
    }

    /// Creates the first file (so a bad directory or permission fails now, not at the first fragment).
    public func start() throws(MuxerError) {
        guard status == .idle else { throw MuxerError(.notRunning, "start() in state \(status)") }
        current = try SegmentWriter(index: 0, tracks: tracks, configuration: configuration, sessionOrigin: nil)
        allPaths.append(configuration.path(forSegment: 0))
        status = .running
    }

    /// Every sample appended with a sequence at or below this is durable (lane 0).
    public var durableThroughSequence: UInt64 { ledger.durableThrough }

    /// Each lane's ack point (``SequenceLane``).
    public var durablePoints: DurablePoints { ledger.points }

    /// Under `.fsyncWhenAsked`: fragments are written and wait for ``syncWrittenFragments()``.
    public var hasUnsyncedFragments: Bool { !unsynced.isEmpty || !awaitingFinalization.isEmpty }

    /// Under `.fsyncWhenAsked`: makes every fragment written so far durable — finalizes the
    /// files split off, fsyncs the open ones — and reports them (`.fragmentDurable`, with the
    /// new ack point, then `.segmentCompleted` for the files finalized). May block on the disk:
    /// the owner calls it where blocking is allowed, not on a thread that serves other work.
    public func syncWrittenFragments() throws(MuxerError) -> [MuxerEvent] {
        try requireRunning()
        guard hasUnsyncedFragments else { return [] }
        let clock = ContinuousClock()
        let start = clock.now
        var completions: [MuxerEvent] = []
        do throws(MuxerError) {
            for writer in awaitingFinalization { try finalizeNow(writer, completions: &completions) }
            awaitingFinalization = []
            for writer in [draining, current].compactMap({ $0 }) { _ = try writer.syncWrittenBytes() }
        } catch {
            fail(error)
            throw error
        }
        return reportUnsyncedAsDurable(syncDuration: clock.now - start) + completions
    }

    public func append(_ sample: MuxerSample) throws(MuxerError) -> [MuxerEvent] {
        try requireRunning()
        guard let t = trackIndexByID[sample.trackID] else {
            throw MuxerError(.unknownTrack, "no track \(sample.trackID) in this recording (tracks: \(tracks.map(\.id)))")
        }
        guard !ended[t] else { throw MuxerError(.trackEnded, "track \(sample.trackID) has ended") }
        // Sequence numbers are idempotency keys: a sample resent after a reconnect (or after a
        // server restart) that the recording already holds is acknowledged again, not re-muxed.
        if ledger.isDuplicate(sample.sequence) {
            return [.duplicateIgnored(trackID: sample.trackID, sequence: sample.sequence)]
        }
        if let violation = MuxerTimestampBounds.violation(pts: sample.pts, dts: sample.dts, duration: sample.duration, reference: timeReference) {
            throw MuxerError(.timestampOutOfRange, "track \(sample.trackID) sequence \(sample.sequence): \(violation)")
        }
        if let last = lastDTS[t], sample.dts <= last {
            throw MuxerError(.decodeTimeWentBackwards, "track \(sample.trackID) sequence \(sample.sequence): DTS \(sample.dts) not after \(last)")
        }
        if let origin = (draining ?? current)?.decodeOrigin, sample.dts < origin {
            throw MuxerError(.sampleBeforeRecordingStart, "track \(sample.trackID) sequence \(sample.sequence): DTS precedes the file's time origin")
        }
        let prepared = try SamplePreparation.prepare(sample, trackIndex: t, track: tracks[t], maxSampleSize: configuration.maxSampleSize)
        lastDTS[t] = sample.dts
        timeReference = timeReference ?? sample.dts
        ledger.appended(sample.sequence)
        interleaver.push(prepared)
        return try pump()
    }

    /// The track will send nothing more (end of stream or a source error): it stops holding
    /// the others back; the rest of the recording goes on.
    public func endTrack(_ trackID: UInt32) throws(MuxerError) -> [MuxerEvent] {
        try requireRunning()
        guard let t = trackIndexByID[trackID] else { throw MuxerError(.unknownTrack, "no track \(trackID) in this recording") }
        ended[t] = true
        interleaver.endTrack(t)
        return try pump()
    }

    /// Writes everything queued and finalizes every file into a regular MP4.
    public func finish() throws(MuxerError) -> RecordingSummary {
        try requireRunning()
        var events: [MuxerEvent] = []
        var completions: [MuxerEvent] = []
        do throws(MuxerError) {
            for sample in interleaver.drain() { try route(sample, events: &events) }
            // Oldest first: a file's fragments are durable before a later file's are counted.
            for writer in awaitingFinalization { try finalizeNow(writer, completions: &completions) }
            awaitingFinalization = []
            for writer in [draining, current].compactMap({ $0 }) {
                try flush(writer, events: &events)
                try finalizeNow(writer, completions: &completions)
            }
            draining = nil
            current = nil
        } catch {
            fail(error)
            throw error
        }
        // Finalizing fsynced every file: what was written and not yet reported is durable now.
        events += reportUnsyncedAsDurable(syncDuration: .zero) + completions
        status = .completed
        return RecordingSummary(segments: completed, stalledTracks: everStalled, events: events)
    }

    /// Stops without finalizing, as a crash would but cleanly: the files are closed as they
    /// are on disk. Every durable fragment stays intact, so a later
    /// ``resume(configuration:)`` continues them and ``MP4Recovery`` can finish them.
    /// Samples still queued for interleaving are dropped. They are past the durable point,
    /// so they were never acknowledged, and the sender still holds them to send again.
    public func suspend() {
        guard status == .running else { return }
        // What was written under `.fsyncWhenAsked` is made durable first, as it would have
        // been under `.fsyncEveryFragment`. Files waiting to be finalized stay fragmented:
        // the resume finalizes them. A failed fsync changes nothing the resume relies on: it
        // reads the files as they are and cuts what is torn.
        for writer in awaitingFinalization + [draining, current].compactMap({ $0 }) {
            _ = try? writer.syncWrittenBytes()
            writer.close()
        }
        awaitingFinalization = []
        unsynced = []
        draining = nil
        current = nil
        status = .suspended
    }

    /// Stops and deletes every file of this recording.
    public func cancel() {
        guard status == .running || status == .idle || status == .failed else { return }
        for writer in awaitingFinalization { writer.discard() }
        draining?.discard()
        current?.discard()
        awaitingFinalization = []
        unsynced = []
        draining = nil
        current = nil
        for path in allPaths { RandomAccessFile.remove(path) }
        status = .cancelled
    }

    // MARK: - Internals

    private func requireRunning() throws(MuxerError) {
        guard status == .running else {
            throw MuxerError(.notRunning, "the muxer is \(status)" + (failure.map { " (\($0.message))" } ?? ""))
        }
    }

    private func fail(_ error: MuxerError) {
        failure = error
        status = .failed
        for writer in awaitingFinalization { writer.close() }
        awaitingFinalization = []
        draining?.close()
        current?.close()
    }

    private func pump() throws(MuxerError) -> [MuxerEvent] {
        var events: [MuxerEvent] = []
        do throws(MuxerError) {
            while let sample = interleaver.next() { try route(sample, events: &events) }
        } catch {
            fail(error)
            throw error
        }
        for event in interleaver.takeEvents() {
            switch event {
            case let .stalled(index, _):
                stalled.insert(tracks[index].id)
                everStalled.insert(tracks[index].id)
                events.append(.trackStalled(trackID: tracks[index].id))
            case let .resumed(index):
                stalled.remove(tracks[index].id)
                events.append(.trackResumed(trackID: tracks[index].id))
            }
        }
        return events
    }

    private func route(_ sample: PreparedSample, events: inout [MuxerEvent]) throws(MuxerError) {
        guard let segment = try segmentFor(sample, events: &events) else { return }
        if segment.shouldCut(before: sample, primaryTrack: primaryTrack) { try flush(segment, events: &events) }
        if !segment.add(sample) {
            ledger.settled([sample.sequence])
            events.append(.sampleRejected(trackID: tracks[sample.trackIndex].id, sequence: sample.sequence,
                                          reason: "decode time precedes the time origin of \(segment.path)"))
            return
        }
        if configuration.isSegmented, draining == nil, !splitRequested, segmentIsFull(segment) { splitRequested = true }
    }

    private func segmentIsFull(_ segment: SegmentWriter) -> Bool {
        if let limit = configuration.maxSegmentDuration, segment.spanNanos >= limit { return true }
        if let limit = configuration.maxSegmentBytes, segment.fileSize + UInt64(segment.pendingBytes) >= UInt64(limit) { return true }
        return false
    }

    /// Picks the file a sample belongs to, opening the next segment at a primary keyframe once
    /// a split is due. Other video tracks move over at their own next keyframe (so every file
    /// starts decodable), audio at the split's presentation time.
    private func segmentFor(_ sample: PreparedSample, events: inout [MuxerEvent]) throws(MuxerError) -> SegmentWriter? {
        guard let current else { return nil }
        let t = sample.trackIndex
        if splitRequested, draining == nil, t == primaryTrack, sample.isSync {
            try flush(current, events: &events)
            sessionOrigin = sessionOrigin ?? current.info?.sessionOriginNanos
            let next = try SegmentWriter(index: current.index + 1, tracks: tracks, configuration: configuration, sessionOrigin: sessionOrigin)
            allPaths.append(next.path)
            draining = current
            self.current = next
            splitRequested = false
            split = (sample.pts, sample.dts)
            switched = ended
            switched[t] = true
            return next
        }
        guard let draining, let split, !switched[t] else { return current }
        // A track whose samples do not all decode on their own moves at its first sync sample
        // from the split on, so the new file starts decodable; any other at the split's time.
        let moves = switch tracks[t].syncSamples {
        case .marked: sample.isSync && sample.dts >= split.dts
        case .everySample: sample.pts >= split.pts
        }
        if moves || TimeScaling.difference(sample.dts, split.dts) > Self.segmentDrainLimit {
            switched[t] = true
            if switched.enumerated().allSatisfy({ $1 || ended[$0] }) {
                try finalizeSegment(draining, events: &events)
                self.draining = nil
            }
            return current
        }
        return draining
    }

    private func flush(_ segment: SegmentWriter, events: inout [MuxerEvent]) throws(MuxerError) {
        if configuration.durability == .fsyncWhenAsked, segment.hasPendingSamples { try syncOtherFiles(before: segment) }
        guard let written = try segment.flush(ackAfter: ackPoint) else { return }
        if segment.index == 0, sessionOrigin == nil { sessionOrigin = segment.info?.sessionOriginNanos }
        var report = FragmentReport(
            segmentIndex: segment.index, fragmentSequence: written.report.fragment, sampleCount: written.report.count,
            byteCount: written.report.bytes, fileEnd: segment.fileSize, highestSequence: written.sequences.max() ?? 0,
            durable: DurablePoints(), writeDuration: written.report.write, syncDuration: written.report.sync)
        if configuration.durability == .fsyncWhenAsked {
            unsynced.append(WrittenFragment(report: report, sequences: written.sequences))
            return
        }
        ledger.settled(written.sequences)
        report.durable = ledger.points
        events.append(.fragmentDurable(report))
    }

    /// A fragment's marker says the ack point once it is durable, counting every fragment
    /// written before it. So before one goes into a file, the fragments other files still hold
    /// unsynced are made durable (on this thread: only around a split): otherwise a power cut
    /// could keep this fragment and lose an earlier one of another file that its marker counts.
    private func syncOtherFiles(before segment: SegmentWriter) throws(MuxerError) {
        for other in awaitingFinalization + [draining, current].compactMap({ $0 }) where other !== segment && other.hasUnsyncedWrites {
            _ = try other.syncWrittenBytes()
        }
    }

    /// Reports every written fragment durable, in order, each with the ack point it brings.
    private func reportUnsyncedAsDurable(syncDuration: Duration) -> [MuxerEvent] {
        defer { unsynced = [] }
        return unsynced.map { fragment in
            ledger.settled(fragment.sequences)
            var report = fragment.report
            report.durable = ledger.points
            report.syncDuration = syncDuration
            return .fragmentDurable(report)
        }
    }

    /// The ack point once `sequences` are durable too, and every fragment written before them
    /// (recorded in each fragment's marker).
    private func ackPoint(after sequences: [UInt64]) -> DurablePoints {
        var copy = ledger
        for fragment in unsynced { copy.settled(fragment.sequences) }
        copy.settled(sequences)
        return copy.points
    }

    /// A file a split closed: finalized now, or under `.fsyncWhenAsked` once its owner asks for
    /// the sync (finalizing reads the file back and fsyncs it).
    private func finalizeSegment(_ segment: SegmentWriter, events: inout [MuxerEvent]) throws(MuxerError) {
        if configuration.durability == .fsyncWhenAsked {
            try flush(segment, events: &events)
            awaitingFinalization.append(segment)
            return
        }
        try flush(segment, events: &events)
        try finalizeNow(segment, completions: &events)
    }

    private func finalizeNow(_ segment: SegmentWriter, completions: inout [MuxerEvent]) throws(MuxerError) {
        if let summary = try segment.finalize(ackAfter: ackPoint) {
            completed.append(summary)
            completions.append(.segmentCompleted(summary))
        }
    }
}

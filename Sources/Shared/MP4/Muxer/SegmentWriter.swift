/// Writes one file of a recording: `ftyp`, a 16-byte placeholder, the init `moov` (written
/// with the first fragment, once the time origins are known), then `moof`+`mdat` fragments.
/// Finalizing appends a complete `moov` and turns the placeholder into an `mdat` header that
/// spans every fragment — a regular MP4 without moving a byte of sample data.
final class SegmentWriter {
    let index: Int
    let path: String
    private let file: RandomAccessFile
    private let tracks: [PreparedTrack]
    private let configuration: MuxerConfiguration
    /// The session's time zero, for this file's `mcrs`; set by a resume whose newest file
    /// never got its first fragment (``MP4Muxer/resume(configuration:)``).
    var sessionOrigin: Int64?

    /// Samples in durable fragments, per track. No per-sample table is kept while recording:
    /// finalize reads the tables back from the fragments on disk (as recovery does), so the
    /// writer's memory stays flat however long the recording runs.
    private var durableSamples: [Int]
    private var pending: [[PreparedSample]]
    private var pendingSampleCount = 0
    private(set) var pendingBytes = 0
    private var fragmentFirstDTS: Int64?
    private var lastDelta: [Int64?]
    private(set) var info: RecordingInfoBox?
    private var nextFragmentSequence: UInt32 = 1
    private(set) var firstDTS: Int64?
    private(set) var lastDTS: Int64?
    /// End of what has been written; the next fragment goes here.
    private(set) var fileSize: UInt64
    /// Under `.fsyncWhenAsked`: where the written but not yet synced bytes start (nil when all
    /// are synced), and whether the file's name is not yet durable in its directory.
    private var unsyncedFrom: UInt64?
    private var directoryUnsynced = false

    static let placeholderOffset = UInt64(FileTypeBox.fragmented.size)
    static let placeholder = FreeSpaceBox(length: 8)

    /// The first bytes of every file while it records: `ftyp` and the placeholder that
    /// finalizing turns into the `mdat` header. Nothing else before the end of the last
    /// fragment changes when a file is finalized in place, so a copy of a file taken while it
    /// recorded, or after, with these bytes in front, is the fragmented file (``MP4Recovery``
    /// and a resume continue it).
    static var fragmentedHead: [UInt8] {
        var w = ByteWriter(capacity: 64)
        FileTypeBox.fragmented.encode(into: &w)
        placeholder.encode(into: &w)
        return w.bytes
    }

    init(index: Int, tracks: [PreparedTrack], configuration: MuxerConfiguration, sessionOrigin: Int64?) throws(MuxerError) {
        self.index = index
        path = configuration.path(forSegment: index)
        self.tracks = tracks
        self.configuration = configuration
        self.sessionOrigin = sessionOrigin
        durableSamples = Array(repeating: 0, count: tracks.count)
        pending = Array(repeating: [], count: tracks.count)
        lastDelta = Array(repeating: nil, count: tracks.count)
        file = try RandomAccessFile(path: path, mode: .createNew(mode: configuration.fileMode))
        let head = Self.fragmentedHead
        try file.write(head, at: 0)
        fileSize = UInt64(head.count)
        if configuration.durability == .fsyncWhenAsked {
            directoryUnsynced = true
        } else {
            RandomAccessFile.syncDirectory(of: path)
        }
    }

    /// What a reopened file already holds, for deduplicating resent samples.
    struct ResumeState {
        var sequences: Set<UInt64>
        var durable: DurablePoints
        /// Source-clock DTS of each track's last sample in the file.
        var lastDTS: [Int64?]
        var bytesDiscarded: UInt64
    }

    /// Reopens a fragmented file a crash left behind to keep recording into it: complete
    /// fragments stay, a torn tail is cut away, and writing continues after the last fragment.
    static func reopen(index: Int, tracks: [PreparedTrack], configuration: MuxerConfiguration) throws(MuxerError) -> (SegmentWriter, ResumeState) {
        let path = configuration.path(forSegment: index)
        let file = try RandomAccessFile(path: path, mode: .readWrite)
        let scan = try MP4FileScanner.scan(file: file, progress: nil)
        guard scan.fileType != nil, scan.boxes.count >= 2, scan.boxes[1].type == FreeSpaceBox.boxType,
              scan.boxes[1].offset == placeholderOffset, scan.boxes[1].size == 16 else {
            if scan.isProgressive { throw MuxerError(.alreadyFinalized, "\(path) is already a finalized MP4") }
            throw MuxerError(.notOurFile, "\(path) is not a recording in progress")
        }
        let writer = SegmentWriter(file: file, index: index, path: path, tracks: tracks, configuration: configuration)
        var state = ResumeState(sequences: [], durable: DurablePoints(), lastDTS: Array(repeating: nil, count: tracks.count), bytesDiscarded: 0)
        guard let movie = scan.movie, !scan.fragments.isEmpty, let info = movie.userData?.recordingInfo else {
            // Died before its first fragment: nothing durable, start the file over after the placeholder.
            try file.truncate(to: placeholderOffset + 16)
            state.bytesDiscarded = scan.fileSize - (placeholderOffset + 16)
            return (writer, state)
        }
        let recorded = movie.tracks.map { $0.media.information.sampleTable.description.entries.first }
        guard recorded == tracks.map({ Optional($0.sampleEntry) }) else {
            throw MuxerError(.codecConfigurationChanged, "\(path) was recorded with other tracks or codec settings than the resumed session")
        }
        let rebuilt = try FragmentTables(fragments: scan.fragments, tracks: tracks)
        // A damaged moof can carry the largest sequence number (found by fuzzing: an overflow
        // here). 2^31 one-second fragments would take 68 years: anything above is damage.
        guard rebuilt.lastFragmentSequence < UInt32.max / 2 else {
            throw MuxerError(.notOurFile, "\(path): fragment sequence number \(rebuilt.lastFragmentSequence) leaves no room for another")
        }
        writer.durableSamples = rebuilt.tables.map(\.sampleCount)
        writer.info = info
        writer.nextFragmentSequence = rebuilt.lastFragmentSequence + 1
        writer.fileSize = scan.endOfStructure
        state.lastDTS = lastDecodeTimes(rebuilt.tables, tracks: tracks, info: info)
        for (t, table) in rebuilt.tables.enumerated() where table.sampleCount > 0 {
            let ts = tracks[t].timescale
            // Saturating: the origin and the tables come from the file, which may be damaged.
            if table.sampleCount > 1 {
                writer.lastDelta[t] = TimeScaling.difference(table.decodeTimes[table.sampleCount - 1], table.decodeTimes[table.sampleCount - 2])
            }
            let first = TimeScaling.sum(info.decodeOriginNanos, TimeScaling.nanos(ticks: table.decodeTimes[0], timescale: ts))
            writer.firstDTS = min(writer.firstDTS ?? first, first)
            writer.lastDTS = max(writer.lastDTS ?? state.lastDTS[t]!, state.lastDTS[t]!)
        }
        try file.truncate(to: scan.endOfStructure)
        try file.sync()
        state.sequences = rebuilt.sequences
        state.durable = rebuilt.durable
        state.bytesDiscarded = scan.fileSize - scan.endOfStructure
        return (writer, state)
    }

    /// Each track's last decode time on the source clock (nil for a track without samples).
    /// Saturating: the origin and the tables come from the file, which may be damaged.
    static func lastDecodeTimes(_ tables: [TrackTable], tracks: [PreparedTrack], info: RecordingInfoBox) -> [Int64?] {
        zip(tables, tracks).map { table, track in
            table.sampleCount == 0 ? nil
                : TimeScaling.sum(info.decodeOriginNanos, TimeScaling.nanos(ticks: table.decodeTimes[table.sampleCount - 1], timescale: track.timescale))
        }
    }

    private init(file: RandomAccessFile, index: Int, path: String, tracks: [PreparedTrack], configuration: MuxerConfiguration) {
        self.index = index
        self.path = path
        self.file = file
        self.tracks = tracks
        self.configuration = configuration
        sessionOrigin = nil
        durableSamples = Array(repeating: 0, count: tracks.count)
        pending = Array(repeating: [], count: tracks.count)
        lastDelta = Array(repeating: nil, count: tracks.count)
        fileSize = Self.placeholderOffset + 16
    }

    var decodeOrigin: Int64? { info?.decodeOriginNanos }
    var hasFragments: Bool { info != nil }
    var hasPendingSamples: Bool { pendingSampleCount > 0 }
    /// Written bytes (or a new name) not yet fsynced: only under `.fsyncWhenAsked`.
    var hasUnsyncedWrites: Bool { unsyncedFrom != nil || directoryUnsynced }
    var fragmentCount: Int { Int(nextFragmentSequence) - 1 }
    var sampleCount: Int { durableSamples.reduce(0, +) + pendingSampleCount }
    var spanNanos: Int64 { TimeScaling.difference(lastDTS ?? 0, firstDTS ?? 0) }

    /// Whether `sample` should open a new fragment: at a keyframe of the primary track once the
    /// fragment holds a quarter of `fragmentDuration`, and always before it would exceed it.
    func shouldCut(before sample: PreparedSample, primaryTrack: Int) -> Bool {
        guard let first = fragmentFirstDTS, pendingSampleCount > 0 else { return false }
        let span = TimeScaling.difference(sample.dts, first)
        if span >= configuration.fragmentDuration { return true }
        return sample.trackIndex == primaryTrack && sample.isSync && tracks[primaryTrack].isVideo
            && span >= configuration.fragmentDuration / 4
    }

    /// Queues a sample for the open fragment. Returns false if it predates this file's origin.
    func add(_ sample: PreparedSample) -> Bool {
        if let origin = decodeOrigin, sample.dts < origin { return false }
        pending[sample.trackIndex].append(sample)
        pendingSampleCount += 1
        pendingBytes += sample.payload.count
        if fragmentFirstDTS == nil { fragmentFirstDTS = sample.dts }
        firstDTS = min(firstDTS ?? sample.dts, sample.dts)
        lastDTS = max(lastDTS ?? sample.dts, sample.dts)
        return true
    }

    /// Writes the open fragment (and the init segment before the first one), durably.
    /// `ackAfter` says what the ack point will be once these sequences are durable; it is
    /// recorded in the fragment's sequence marker.
    func flush(ackAfter: ([UInt64]) -> DurablePoints) throws(MuxerError) -> (sequences: [UInt64], report: (count: Int, bytes: Int, fragment: UInt32, write: Duration, sync: Duration))? {
        guard pendingSampleCount > 0 else { return nil }
        let writtenFrom = fileSize
        if info == nil { try writeInitSegment() }
        guard let origin = decodeOrigin else { return nil }
        var runs: [FragmentAssembler.TrackRun] = []
        var lastDeltas = lastDelta
        for (t, samples) in pending.enumerated() where !samples.isEmpty {
            let ts = tracks[t].timescale
            // append() keeps every time within MuxerTimestampBounds of the origin; the arithmetic
            // saturates anyway, so no sample can make this trap.
            let dts = samples.map { TimeScaling.ticks(nanos: TimeScaling.difference($0.dts, origin), timescale: ts) }
            let cts = samples.enumerated().map { i, s in
                Int32(clamping: TimeScaling.difference(TimeScaling.ticks(nanos: TimeScaling.difference(s.pts, origin), timescale: ts), dts[i]))
            }
            var durations = [UInt32](repeating: 0, count: samples.count)
            for i in 0..<samples.count - 1 { durations[i] = UInt32(clamping: TimeScaling.difference(dts[i + 1], dts[i])) }
            if samples.count > 1 { lastDeltas[t] = TimeScaling.difference(dts[samples.count - 1], dts[samples.count - 2]) }
            let last = samples[samples.count - 1]
            let guessed = last.duration > 0 ? TimeScaling.ticks(nanos: last.duration, timescale: ts)
                : lastDeltas[t] ?? type(of: tracks[t].codec).nominalSampleTicks
            durations[samples.count - 1] = UInt32(clamping: guessed)
            runs.append(.init(trackIndex: t, decodeTimes: dts, compositionOffsets: cts,
                              sizes: samples.map { UInt32($0.payload.count) }, sync: samples.map(\.isSync), durations: durations))
        }
        let sequences = pending.flatMap { $0.map(\.sequence) }
        let marker = SequenceMarkerBox(durable: ackAfter(sequences), sequences: sequences)
        let output = FragmentAssembler.assemble(sequence: nextFragmentSequence, tracks: tracks, runs: runs, payloads: pending, marker: marker)
        // Timed for metrics only; no decision depends on it.
        let clock = ContinuousClock()
        let writeStart = clock.now
        var syncStart = writeStart
        do {
            try file.write(gathering: output.parts, at: fileSize)
            syncStart = clock.now
            switch configuration.durability {
            case .fsyncEveryFragment:
                try file.sync()
                // Written media is not read back while recording (finalize reads only the moofs):
                // keep it from crowding the page cache, which a server writing many streams
                // would otherwise fill and then have to reclaim under load.
                file.dropCachedPages(offset: fileSize, length: UInt64(output.byteCount))
            case .fsyncWhenAsked:
                unsyncedFrom = unsyncedFrom ?? writtenFrom
            case .none:
                break
            }
        } catch {
            // A failed write (a full disk) can leave part of the fragment behind. Cut it off, so
            // the file stays a clean run of whole fragments that plays as it is. Best effort:
            // shrinking a file needs no space, and recovery would cut the same tail later.
            try? file.truncate(to: fileSize)
            throw error
        }
        let syncEnd = clock.now
        // Only now, with the bytes durable, does the fragment count as part of the file.
        for run in output.runs { durableSamples[run.trackIndex] += run.sizes.count }
        lastDelta = lastDeltas
        fileSize += UInt64(output.byteCount)
        let fragment = nextFragmentSequence
        nextFragmentSequence += 1
        pending = Array(repeating: [], count: tracks.count)
        pendingSampleCount = 0
        pendingBytes = 0
        fragmentFirstDTS = nil
        return (sequences, (output.sampleCount, output.byteCount, fragment, syncStart - writeStart, syncEnd - syncStart))
    }

    /// Makes what was written durable (under `.fsyncWhenAsked`): the file's name in its
    /// directory, then its bytes. Returns the time the fsyncs took. May block on the disk.
    func syncWrittenBytes() throws(MuxerError) -> Duration {
        guard hasUnsyncedWrites else { return .zero }
        let clock = ContinuousClock()
        let start = clock.now
        if directoryUnsynced {
            RandomAccessFile.syncDirectory(of: path)
            directoryUnsynced = false
        }
        if let from = unsyncedFrom {
            try file.sync()
            // As in flush(ackAfter:): written media is not read back while recording.
            file.dropCachedPages(offset: from, length: fileSize - from)
            unsyncedFrom = nil
        }
        return clock.now - start
    }

    private func writeInitSegment() throws(MuxerError) {
        let all = pending.joined()
        guard let earliestDTS = all.map(\.dts).min(), let presentationOrigin = all.map(\.pts).min() else { return }
        // The decode timeline starts one stall window before the earliest sample so far: a
        // source whose first samples arrive after this fragment (a late or faster-than-real-time
        // start) but carry slightly earlier timestamps is still representable. Presentation is
        // unaffected: edit lists are computed from the samples themselves.
        let decodeOrigin = TimeScaling.difference(earliestDTS, configuration.stallTimeout)
        let info = RecordingInfoBox(sessionOriginNanos: sessionOrigin ?? presentationOrigin, segmentOriginNanos: presentationOrigin,
                                    decodeOriginNanos: decodeOrigin, segmentIndex: UInt32(index))
        let moov = MovieBuilder.initMovie(tracks: tracks, creationTime: configuration.creationTime, info: info).encoded()
        try file.write(moov, at: fileSize)
        fileSize += UInt64(moov.count)
        self.info = info
    }

    /// Flushes, writes the complete `moov` and makes the file a regular MP4.
    func finalize(ackAfter: ([UInt64]) -> DurablePoints) throws(MuxerError) -> SegmentSummary? {
        _ = try flush(ackAfter: ackAfter)
        guard var info else {
            file.close()
            RandomAccessFile.remove(path) // nothing was ever recorded into it
            return nil
        }
        let tables = try tablesFromFragments()
        info.segmentOriginNanos = MovieBuilder.presentationOrigin(tracks: tracks, tables: tables, decodeOrigin: info.decodeOriginNanos)
            ?? info.segmentOriginNanos
        self.info = info
        if directoryUnsynced {
            RandomAccessFile.syncDirectory(of: path)
            directoryUnsynced = false
        }
        try Self.finalizeInPlace(file: file, tracks: tracks, tables: tables, info: info, fragmentsEnd: fileSize,
                                 creationTime: configuration.creationTime, durable: configuration.durability.syncsFiles)
        // finalizeInPlace fsynced the fragments with the moov.
        unsyncedFrom = nil
        file.close()
        if configuration.finalizeMode == .faststart {
            try Faststart.rewrite(path: path, tracks: tracks, tables: tables, info: info, creationTime: configuration.creationTime,
                                  fileMode: configuration.fileMode)
        }
        return summary(info: info, tables: tables)
    }

    /// The complete sample tables, read back from this file's fragments (tfdt + trun) — the
    /// same tables recovery builds, so a clean finish and a recovery end in the same file.
    private func tablesFromFragments() throws(MuxerError) -> [TrackTable] {
        let scan = try MP4FileScanner.scan(file: file, progress: nil)
        let tables = try FragmentTables(fragments: scan.fragments, tracks: tracks).tables
        guard scan.fragments.count == fragmentCount, scan.endOfStructure == fileSize,
              tables.map(\.sampleCount) == durableSamples else {
            throw MuxerError(.io, "\(path): reading the fragments back found \(scan.fragments.count) of \(fragmentCount) fragments and " +
                             "\(tables.map(\.sampleCount)) of \(durableSamples) samples" + (scan.tornReason.map { " (\($0))" } ?? ""))
        }
        return tables
    }

    /// Shared with recovery: append the full moov at `fragmentsEnd`, then flip the placeholder.
    /// A crash between the two steps leaves a fragmented file plus a trailing moov, which
    /// recovery ignores and redoes.
    static func finalizeInPlace(file: RandomAccessFile, tracks: [PreparedTrack], tables: [TrackTable], info: RecordingInfoBox,
                                fragmentsEnd: UInt64, creationTime: Int64, durable: Bool = true) throws(MuxerError) {
        let moov = MovieBuilder.finalMovie(tracks: tracks, tables: tables, creationTime: creationTime, info: info).encoded()
        try file.write(moov, at: fragmentsEnd)
        try file.truncate(to: fragmentsEnd + UInt64(moov.count))
        if durable { try file.sync() }
        var head = ByteWriter(capacity: 40)
        FileTypeBox.progressive.encode(into: &head)
        MediaDataHeader(payloadSize: fragmentsEnd - placeholderOffset - 16, forceLarge: true).encode(into: &head)
        try file.write(head.bytes, at: 0)
        if durable { try file.sync() }
    }

    private func summary(info: RecordingInfoBox, tables: [TrackTable]) -> SegmentSummary {
        let finalSize = (try? RandomAccessFile(path: path, mode: .readOnly).size()) ?? fileSize
        var trackSummaries: [TrackSummary] = []
        var duration: Int64 = 0
        for (track, table) in zip(tracks, tables) {
            let d = table.sampleCount > 0 ? TimeScaling.difference(table.endDecodeTime, table.decodeTimes[0]) : 0
            duration = max(duration, TimeScaling.nanos(ticks: d, timescale: track.timescale))
            trackSummaries.append(TrackSummary(trackID: track.id, label: track.configuration.label, sampleCount: table.sampleCount,
                                               payloadBytes: table.payloadBytes, duration: d, timescale: track.timescale))
        }
        return SegmentSummary(index: index, path: path, startNanos: info.segmentStartNanos, durationNanos: duration,
                              fileSize: finalSize, fragmentCount: fragmentCount, tracks: trackSummaries)
    }

    /// Cancel: close and delete.
    func discard() {
        file.close()
        RandomAccessFile.remove(path)
    }

    func close() { file.close() }
}

/// A time range of a session, across its segment files, as one regular MP4 — without decoding
/// or re-encoding anything (issue 17, "export").
///
/// Planning reads only the files' tables (`moov`, or the fragments of a file still being
/// recorded) and decides everything: which samples, the new `moov` with its edit lists, and
/// where each byte of the new `mdat` comes from. The result is then streamed — `head`, then
/// the ``pieces`` read from the source files — so the file is never built in memory or on disk,
/// and its size is known before the first byte.
///
/// Each video track starts at the last keyframe at or before `from`; each track without sync
/// marks (sound) starts early by its codec's pre-roll. Edit lists hide what lies before
/// `from`, so playback begins exactly there. A track ends with its last sample shown before
/// `to`, so the file ends within one frame (or one audio packet) of `to`.
public final class SessionExport: @unchecked Sendable {
    /// What to take. Times are session times: nanoseconds from the session's time zero (the
    /// first sample of any track), the timeline every segment's `mcrs` box is placed on.
    public struct Request: Sendable, Equatable {
        public var fromNanos: Int64
        /// nil: to the end of what is recorded.
        public var toNanos: Int64?
        /// Track labels to keep, in any order; nil keeps every track.
        public var labels: [String]?

        public init(fromNanos: Int64, toNanos: Int64?, labels: [String]?) {
            self.fromNanos = fromNanos
            self.toNanos = toNanos
            self.labels = labels
        }
    }

    /// One source file, in segment order. A live file may not have its first fragment yet.
    public struct Source: Sendable, Equatable {
        public var path: String
        public var isLive: Bool
        public init(path: String, isLive: Bool) {
            self.path = path
            self.isLive = isLive
        }
    }

    /// Bytes of one source file that go next into the new `mdat`.
    public struct Piece: Sendable, Equatable {
        public var file: Int
        public var offset: UInt64
        public var length: UInt64
    }

    public struct Track: Sendable, Equatable {
        public var label: String
        public var kind: String
        public var codec: String
        public var sampleCount: Int
        /// What the file shows of this track, in session time (after the edit list).
        public var startNanos: Int64
        public var endNanos: Int64
    }

    /// Most samples one export may hold: about 9 hours of two 30 fps cameras and 20 ms sound,
    /// and a `moov` of some 50 MB. Bounds the plan's memory.
    public static let maxSamples = 4_000_000
    /// Sound and pictures are interleaved in runs of this much decode time.
    static let chunkNanos: Int64 = 500_000_000

    /// `ftyp`, `moov` and the `mdat` header: the first bytes of the export.
    public let head: [UInt8]
    public let pieces: [Piece]
    public let size: UInt64
    public let tracks: [Track]
    /// The range the export shows, clamped to what the session holds.
    public let fromNanos: Int64
    public let toNanos: Int64
    /// Opened while planning and kept open: a file renamed over (faststart) or removed
    /// meanwhile still gives the bytes the plan describes.
    private let files: SourceFiles

    private init(head: [UInt8], pieces: [Piece], size: UInt64, tracks: [Track], fromNanos: Int64, toNanos: Int64, files: SourceFiles) {
        self.head = head
        self.pieces = pieces
        self.size = size
        self.tracks = tracks
        self.fromNanos = fromNanos
        self.toNanos = toNanos
        self.files = files
    }

    /// Reads `count` bytes of a piece's file (a positioned read; safe from several threads).
    public func read(file: Int, offset: UInt64, count: Int) throws(ExportError) -> [UInt8] {
        try files.read(file: file, offset: offset, count: count)
    }

    public func close() { files.close() }

    // MARK: Planning

    public static func plan(sources: [Source], request: Request) throws(ExportError) -> SessionExport {
        guard request.fromNanos >= 0 else { throw ExportError(.invalidRequest, "from is before the session's start (\(Double(request.fromNanos) / 1e9) s); session times start at 0") }
        if let to = request.toNanos, to <= request.fromNanos {
            throw ExportError(.invalidRequest, "to (\(Double(to) / 1e9) s) is not after from (\(Double(request.fromNanos) / 1e9) s)")
        }
        let loaded = try SessionSamples.load(sources, window: (request.fromNanos, request.toNanos), maxSamples: 2 * maxSamples)
        let merged = loaded.tracks
        var chosen = merged
        if let labels = request.labels {
            for label in labels { _ = try loaded.track(label) }
            chosen = merged.filter { labels.contains($0.track.configuration.label) }
        }
        guard !chosen.isEmpty else {
            if let recordedEnd = loaded.recordedEnd, !merged.isEmpty || loaded.skippedFiles > 0 {
                throw ExportError(.emptyRange, "the session's tracks end at \(Double(recordedEnd) / 1e9) s, before from (\(Double(request.fromNanos) / 1e9) s)")
            }
            throw ExportError(.emptyRange, "the session has no samples yet")
        }
        return try build(chosen, request: request, creationTime: loaded.creationTime, files: loaded.files)
    }

    private static func build(_ timelines: [TimelineTrack], request: Request, creationTime: Int64,
                              files: SourceFiles) throws(ExportError) -> SessionExport {
        let sessionEnd = timelines.compactMap { t in
            t.samples.map { TimeScaling.sum($0.presentationTicks(preSkip: t.track.preSkip), Int64($0.duration)) }.max()
                .map { TimeScaling.nanos(ticks: $0, timescale: t.track.timescale) }
        }.max() ?? 0
        let from = pictureStart(timelines, at: request.fromNanos)
        let to = min(request.toNanos ?? sessionEnd, sessionEnd)
        guard to > from else {
            throw ExportError(.emptyRange, "the session's tracks end at \(Double(sessionEnd) / 1e9) s, before from (\(Double(from) / 1e9) s)")
        }
        var selections: [(timeline: TimelineTrack, range: ClosedRange<Int>)] = []
        for timeline in timelines {
            if let range = selection(timeline, from: from, to: to) { selections.append((timeline, range)) }
        }
        guard !selections.isEmpty else {
            throw ExportError(.emptyRange, "none of the chosen tracks has a sample between \(Double(from) / 1e9) s and \(Double(to) / 1e9) s")
        }
        let total = selections.reduce(0) { $0 + $1.range.count }
        guard total <= maxSamples else {
            throw ExportError(.tooLarge, "the range holds \(total) samples, more than the \(maxSamples) one export may hold; export a shorter range")
        }

        // The export's decode origin: its earliest decode time over all tracks.
        let origin = selections.map { s in
            TimeScaling.nanos(ticks: s.timeline.samples[s.range.lowerBound].decodeTicks, timescale: s.timeline.track.timescale)
        }.min() ?? 0
        var layout = Layout(tracks: selections.map { s in
            Layout.Cursor(samples: s.timeline.samples[s.range], timescale: s.timeline.track.timescale,
                          base: min(TimeScaling.ticks(nanos: origin, timescale: s.timeline.track.timescale), s.timeline.samples[s.range.lowerBound].decodeTicks))
        })
        layout.interleave(chunkNanos: chunkNanos)

        let prepared = selections.map(\.timeline.track)
        let info = RecordingInfoBox(sessionOriginNanos: 0, segmentOriginNanos: from, decodeOriginNanos: origin, segmentIndex: 0)
        let head = encodeHead(tracks: prepared, tables: layout.tables, creationTime: creationTime, info: info, mediaBytes: layout.position)
        let tracks = zip(selections, layout.tables).map { selection, table in
            shownRange(selection.timeline.track, table: table, from: from, origin: origin)
        }
        return SessionExport(head: head, pieces: layout.pieces, size: UInt64(head.count) + layout.position, tracks: tracks,
                             fromNanos: from, toNanos: to, files: files)
    }

    /// The samples of one track the export needs, or nil when it has none in the range.
    static func selection(_ timeline: TimelineTrack, from: Int64, to: Int64) -> ClosedRange<Int>? {
        let track = timeline.track, samples = timeline.samples
        let f = TimeScaling.ticks(nanos: from, timescale: track.timescale)
        let t = TimeScaling.ticks(nanos: to, timescale: track.timescale)
        let shown = samples.map { $0.presentationTicks(preSkip: track.preSkip) }
        guard let last = shown.lastIndex(where: { $0 < t }) else { return nil }
        var first: Int
        if track.syncSamples == .marked {
            // The keyframe at or before `from`; a track that starts later starts at its first.
            guard let key = samples[...last].indices.last(where: { samples[$0].isSync && shown[$0] <= f })
                ?? samples[...last].indices.first(where: { samples[$0].isSync }) else { return nil }
            first = key
        } else {
            first = shown[...last].lastIndex(where: { $0 <= f }) ?? 0
            // Sound starts early by the decoder's pre-roll; the edit list hides it.
            let start = TimeScaling.difference(f, TimeScaling.ticks(nanos: preRollNanos(track), timescale: track.timescale))
            while first > 0, shown[first] > start { first -= 1 }
        }
        // A track that ends before `from` has nothing to show.
        guard TimeScaling.sum(shown[last], Int64(samples[last].duration)) > f else { return nil }
        return first ... last
    }

    /// The start of the picture the first chosen camera shows at `from`: the export starts
    /// there, so its first picture is whole. (An edit inside a picture's display time is read
    /// differently: ffmpeg drops that picture and shows the next one at the edit's start.)
    /// Other cameras, not in step with the first, may start inside a picture of theirs.
    static func pictureStart(_ timelines: [TimelineTrack], at from: Int64) -> Int64 {
        guard let camera = timelines.first(where: { $0.track.syncSamples == .marked }) else { return from }
        let ts = camera.track.timescale
        let f = TimeScaling.ticks(nanos: from, timescale: ts)
        let onScreen = camera.samples.lazy.map { ($0.presentationTicks(preSkip: camera.track.preSkip), Int64($0.duration)) }
            .filter { start, duration in start <= f && f < TimeScaling.sum(start, duration) }.map(\.0).max()
        return onScreen.map { max(0, TimeScaling.nanos(ticks: $0, timescale: ts)) } ?? from
    }

    /// How much a decoder needs before the first sample it must get right (RFC 7845 §4.6:
    /// 80 ms for Opus). Pictures start at a keyframe instead.
    static func preRollNanos(_ track: PreparedTrack) -> Int64 {
        switch track.configuration.codec {
        case .opus: 80_000_000
        case .h264, .unsupported: 0
        }
    }

    /// ftyp, the moov (chunk offsets past itself, "faststart") and a 64-bit mdat header. The
    /// moov's size depends on its offsets (stco or co64): iterate until it settles.
    private static func encodeHead(tracks: [PreparedTrack], tables: [TrackTable], creationTime: Int64,
                                   info: RecordingInfoBox, mediaBytes: UInt64) -> [UInt8] {
        let ftyp = FileTypeBox.progressive
        var moov: [UInt8] = []
        var settled = -1
        while moov.count != settled {
            settled = moov.count
            let shift = Int64(ftyp.size + settled + 16)
            var movie = MovieBuilder.finalMovie(tracks: tracks, tables: tables, creationTime: creationTime, info: info, offsetShift: shift)
            // An export is not a segment of a session: no mcrs, so nothing takes it for one.
            movie.userData = nil
            moov = movie.encoded()
        }
        var w = ByteWriter(capacity: moov.count + 64)
        ftyp.encode(into: &w)
        w.append(moov)
        MediaDataHeader(payloadSize: mediaBytes, forceLarge: true).encode(into: &w)
        return w.bytes
    }

    /// What a player shows of a track: from its edit list's start to its last sample's end.
    private static func shownRange(_ track: PreparedTrack, table: TrackTable, from: Int64, origin: Int64) -> Track {
        let ts = track.timescale, preSkip = Int64(track.preSkip)
        func sessionNanos(_ ticks: Int64) -> Int64 { TimeScaling.sum(origin, TimeScaling.nanos(ticks: TimeScaling.difference(ticks, preSkip), timescale: ts)) }
        return Track(label: track.configuration.label, kind: track.kind.rawValue,
                     codec: TrackCodecs.writing(track.sampleEntry)?.name.rawValue ?? "unknown", sampleCount: table.sampleCount,
                     startNanos: max(from, sessionNanos(table.earliestPresentationTime ?? 0)), endNanos: sessionNanos(table.presentationEndTime))
    }
}

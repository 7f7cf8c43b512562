/// One track of a session as a fragmented MP4 that a browser's Media Source Extensions can
/// play: an init segment, then `moof`+`mdat` fragments built from the session files' own
/// samples (never decoded or re-encoded), finished segments and the file still being recorded
/// alike. Every track's times are session times (tfdt counts from the session's time zero), so
/// the players of several tracks share one timeline: `currentTime` is session seconds.
///
/// A stream is pulled: ``refresh(sources:)`` reads what the files hold now past what was
/// already returned, and ``nextFragment()`` returns it a fragment at a time (at most
/// ``fragmentNanos`` of media, a new one at each keyframe), so memory stays at one fragment
/// whatever the length of the recording. For a live session, refresh again as fragments
/// become durable.
public final class TrackStream: @unchecked Sendable {
    /// Longest fragment: MSE appends it whole, and the live edge moves by at most this much.
    static let fragmentNanos: Int64 = 1_000_000_000
    static let placementSlack: Int64 = 2

    public let label: String
    /// What `MediaSource.isTypeSupported` and `addSourceBuffer` take, e.g.
    /// `video/mp4; codecs="avc1.64001F"` or `audio/mp4; codecs="opus"`.
    public let mimeType: String
    public let initSegment: [UInt8]
    /// Where the stream started, session nanoseconds (a keyframe's presentation time for video).
    public private(set) var startNanos: Int64 = 0

    private let track: PreparedTrack
    private var pending: ArraySlice<TimelineSample> = []
    private var files = SourceFiles()
    private var lastDecodeTicks: Int64?
    /// The decode time of the sample the stream starts with, once chosen.
    private var firstDecodeTicks: Int64?
    private var sequence: UInt32 = 0
    /// Where to begin on the first refresh: session nanos, or nil for the live edge.
    private var start: Int64?

    private init(track: PreparedTrack, start: Int64?) {
        self.track = track
        label = track.configuration.label
        self.start = start
        mimeType = Self.mimeType(track)
        var movie = MovieBuilder.initMovie(tracks: [track], creationTime: 0,
                                           info: RecordingInfoBox(sessionOriginNanos: 0, segmentOriginNanos: 0, decodeOriginNanos: 0, segmentIndex: 0))
        movie.userData = nil
        var w = ByteWriter(capacity: 1024)
        FileTypeBox.fragmented.encode(into: &w)
        movie.encode(into: &w)
        initSegment = w.bytes
    }

    /// Opens the stream of the track `label`. `fromNanos` nil starts at the live edge (the
    /// last keyframe durable now); otherwise at the keyframe at or before it.
    public static func open(sources: [SessionExport.Source], label: String, fromNanos: Int64?) throws(ExportError) -> TrackStream {
        let loaded = try SessionSamples.load(sources, window: fromNanos.map { ($0, nil) }, maxSamples: SessionExport.maxSamples)
        guard !loaded.tracks.isEmpty else { throw ExportError(.emptyRange, "the session has no samples yet") }
        let stream = TrackStream(track: try loaded.track(label).track, start: fromNanos)
        stream.take(loaded)
        return stream
    }

    /// Reads the sources again (a live session's file has grown, or a new segment begun) and
    /// queues every sample past the last one returned.
    public func refresh(sources: [SessionExport.Source]) throws(ExportError) {
        let from = (lastDecodeTicks ?? firstDecodeTicks).map { TimeScaling.nanos(ticks: $0, timescale: track.timescale) } ?? start ?? 0
        take(try SessionSamples.load(sources, window: (from, nil), maxSamples: SessionExport.maxSamples))
    }

    /// Samples read and not yet returned.
    public var pendingSamples: Int { pending.count }

    private func take(_ loaded: SessionSamples) {
        guard let timeline = try? loaded.track(label) else { return }  // no file of it durable yet: nothing to queue
        files = loaded.files
        var samples = timeline.samples[...]
        if let last = lastDecodeTicks {
            // A file read first as fragments and again once finished places its samples from
            // different fields (tfdt, or stbl and the edit list): rounding may move one by a
            // tick. Samples are hundreds of ticks apart, so a margin of two cannot drop one.
            samples = samples.drop { $0.decodeTicks <= TimeScaling.sum(last, Self.placementSlack) }
        } else if let first = firstDecodeTicks {
            // The start is chosen but nothing was returned yet (a live stream holds its newest
            // sample back): keep that start. Choosing again would pick the newest keyframe
            // again, and for sound, where every packet is one, the stream would never begin.
            samples = samples.drop { TimeScaling.difference(first, $0.decodeTicks) > Self.placementSlack }
        } else {
            // The first refresh: begin at a keyframe, at or before `start`, or the last one.
            let preSkip = track.preSkip
            samples = samples.drop { $0.presentationTicks(preSkip: preSkip) < 0 }  // tfdt cannot be negative
            let limit = start.map { TimeScaling.ticks(nanos: $0, timescale: track.timescale) } ?? .max
            let keys = samples.indices.filter { samples[$0].isSync && samples[$0].presentationTicks(preSkip: preSkip) <= limit }
            guard let first = keys.last ?? samples.indices.first(where: { samples[$0].isSync }) else { return }
            samples = samples[first...]
            firstDecodeTicks = samples[first].decodeTicks
            startNanos = TimeScaling.nanos(ticks: samples[first].presentationTicks(preSkip: preSkip), timescale: track.timescale)
        }
        pending = samples
    }

    /// The next fragment (moof + mdat), or nil when everything read so far has been returned.
    /// `holdingLast` keeps the newest sample back until the one after it is read (a live
    /// session): its duration is then exact, not the file's guess.
    public func nextFragment(holdingLast: Bool = false) throws(ExportError) -> [UInt8]? {
        let available = holdingLast ? pending.count - 1 : pending.count
        guard available > 0, let first = pending.first else { return nil }
        let limit = TimeScaling.sum(first.decodeTicks, TimeScaling.ticks(nanos: Self.fragmentNanos, timescale: track.timescale))
        var count = 1
        while count < available, pending[pending.startIndex + count].decodeTicks < limit,
              !(track.syncSamples == .marked && pending[pending.startIndex + count].isSync) {
            count += 1
        }
        let chunk = pending.prefix(count)
        let next = count < pending.count ? pending[pending.startIndex + count] : nil
        var samples: [TrackRunBox.Sample] = []
        for (i, sample) in zip(chunk.indices, chunk) {
            let after = i + 1 < chunk.endIndex ? chunk[i + 1] : next
            let duration = after.map { UInt32(clamping: TimeScaling.difference($0.decodeTicks, sample.decodeTicks)) } ?? sample.duration
            samples.append(TrackRunBox.Sample(duration: duration, size: sample.size,
                                              flags: sample.isSync ? TrackRunBox.syncSampleFlags : TrackRunBox.nonSyncSampleFlags,
                                              compositionOffset: sample.compositionOffset))
        }
        sequence += 1
        let decodeTime = UInt64(max(0, TimeScaling.difference(first.decodeTicks, Int64(track.preSkip))))
        func moof(dataOffset: Int) -> MovieFragmentBox {
            MovieFragmentBox(sequenceNumber: sequence, trackFragments: [
                TrackFragmentBox(header: TrackFragmentHeaderBox(trackID: track.id), decodeTime: TrackFragmentDecodeTimeBox(baseMediaDecodeTime: decodeTime),
                                 run: TrackRunBox(dataOffset: Int32(clamping: dataOffset), samples: samples)),
            ])
        }
        let payload = chunk.reduce(UInt64(0)) { $0 + UInt64($1.size) }
        let mdat = MediaDataHeader(payloadSize: payload)
        let box = moof(dataOffset: moof(dataOffset: 0).size + mdat.headerSize)
        var w = ByteWriter(capacity: box.size + mdat.headerSize + Int(payload))
        box.encode(into: &w)
        mdat.encode(into: &w)
        for sample in chunk { w.append(try files.read(file: sample.file, offset: sample.offset, count: Int(sample.size))) }
        pending.removeFirst(count)
        lastDecodeTicks = chunk.last?.decodeTicks
        return w.bytes
    }

    /// RFC 6381 codec parameters: `avc1.PPCCLL` from the SPS's profile, constraints and level.
    static func mimeType(_ track: PreparedTrack) -> String {
        switch track.configuration.codec {
        case let .h264(sps, _) where sps.count >= 4:
            return "video/mp4; codecs=\"avc1.\(sps[1 ... 3].map { hex($0) }.joined())\""
        case .opus:
            return "audio/mp4; codecs=\"opus\""
        case .h264, .unsupported:
            return track.kind == .audio ? "audio/mp4" : "video/mp4"
        }
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0xF)]])
    }
}

/// One sample of a session's track, placed on the session timeline: where its bytes are and
/// when it is decoded and shown. Built from a file's own tables (finished files) or fragments
/// (a file still being recorded), so an export never decodes or re-encodes anything.
struct TimelineSample: Sendable {
    /// Index of the source file in the export's file list.
    var file: Int
    var offset: UInt64
    var size: UInt32
    /// Decode time in track ticks from the session's time zero, shifted so that the sample
    /// is shown at `decodeTicks + compositionOffset - preSkip` (the muxer's convention: the
    /// edit list hides the codec's priming).
    var decodeTicks: Int64
    var compositionOffset: Int32
    var duration: UInt32
    var isSync: Bool

    func presentationTicks(preSkip: Int) -> Int64 {
        TimeScaling.difference(TimeScaling.sum(decodeTicks, Int64(compositionOffset)), Int64(preSkip))
    }
}

/// One track of one source file on the session timeline.
struct TimelineTrack {
    var track: PreparedTrack
    var samples: [TimelineSample]
}

enum SessionTimeline {
    /// The tracks of one of our files (finished or still fragmented), their samples placed on
    /// the session timeline the file's `mcrs` box names.
    static func tracks(of scan: MP4FileScanner.Result, file: Int, path: String) throws(ExportError) -> [TimelineTrack] {
        guard let movie = scan.movie, let info = movie.userData?.recordingInfo else {
            throw ExportError(.notOurFile, "\(path) is not a recording of this server (no moov with an mcrs box)")
        }
        let creation = MovieBuilder.unixTime(movie.header.creationTime)
        var prepared: [PreparedTrack] = []
        for trak in movie.tracks {
            do { prepared.append(try PreparedTrack(trak: trak, creationTime: creation)) } catch {
                throw ExportError(.notOurFile, "\(path): \(error)")
            }
        }
        if scan.isFragmented {
            return try fragmentedTracks(scan, prepared: prepared, info: info, file: file, path: path)
        }
        var out: [TimelineTrack] = []
        for (trak, track) in zip(movie.tracks, prepared) {
            out.append(TimelineTrack(track: track, samples: try finishedSamples(trak, track: track, info: info,
                                                                                movieTimescale: movie.header.timescale, file: file, path: path)))
        }
        return out
    }

    /// A file still being recorded: its complete fragments (the durable part). `tfdt` counts
    /// from the file's decode origin.
    private static func fragmentedTracks(_ scan: MP4FileScanner.Result, prepared: [PreparedTrack], info: RecordingInfoBox,
                                         file: Int, path: String) throws(ExportError) -> [TimelineTrack] {
        let tables: FragmentTables
        do { tables = try FragmentTables(fragments: scan.fragments, tracks: prepared) } catch {
            throw ExportError(.notOurFile, "\(path): \(error)")
        }
        let originNanos = TimeScaling.difference(info.decodeOriginNanos, info.sessionOriginNanos)
        return zip(prepared, tables.tables).map { track, table in
            let shift = TimeScaling.ticks(nanos: originNanos, timescale: track.timescale)
            return TimelineTrack(track: track, samples: samples(of: table, file: file) { TimeScaling.sum($0, shift) })
        }
    }

    /// A finished file: `stbl` counts decode time from the track's first sample, and the edit
    /// list places it — an empty edit (movie timescale) then the media time shown first.
    private static func finishedSamples(_ trak: TrackBox, track: PreparedTrack, info: RecordingInfoBox, movieTimescale: UInt32,
                                        file: Int, path: String) throws(ExportError) -> [TimelineSample] {
        let stbl = trak.media.information.sampleTable
        let entries = trak.edit?.editList.entries ?? []
        var emptyMovieTicks: Int64 = 0
        var mediaTime: Int64 = 0
        for entry in entries {
            if entry.mediaTime == -1 { emptyMovieTicks = TimeScaling.sum(emptyMovieTicks, Int64(clamping: entry.segmentDuration)) } else {
                mediaTime = entry.mediaTime
                break
            }
        }
        let ts = track.timescale
        // Media tick t is shown at segmentStart + empty + (t - mediaTime); see TimelineSample.
        let shift = TimeScaling.sum(
            TimeScaling.sum(TimeScaling.ticks(nanos: info.segmentStartNanos, timescale: ts),
                            TimeScaling.scale(emptyMovieTicks, by: Int64(ts), over: Int64(movieTimescale))),
            TimeScaling.difference(Int64(track.preSkip), mediaTime))
        var table = TrackTable()
        // Counts come from the file: checked before any table is expanded, so a damaged box
        // cannot make one allocate billions of entries.
        let count = stbl.sampleSizes.count
        guard count <= SessionExport.maxSamples else {
            throw ExportError(.tooLarge, "\(path): track \(track.id) has \(count) samples, more than one export may hold (\(SessionExport.maxSamples))")
        }
        let timeCount = stbl.timeToSample.entries.reduce(UInt64(0)) { $0 + UInt64($1.count) }
        let offsetCount = (stbl.compositionOffsets?.entries ?? []).reduce(UInt64(0)) { $0 + UInt64($1.count) }
        guard timeCount == UInt64(count), offsetCount == 0 || offsetCount == UInt64(count) else {
            throw ExportError(.notOurFile, "\(path): track \(track.id)'s tables disagree on its sample count")
        }
        let sizes = stbl.sampleSizes.sizes
        let durations = stbl.timeToSample.entries.flatMap { Array(repeating: $0.delta, count: Int($0.count)) }
        let offsets = (stbl.compositionOffsets?.entries ?? []).flatMap { Array(repeating: $0.offset, count: Int($0.count)) }
        let syncNumbers = stbl.syncSamples.map { Set($0.sampleNumbers) }
        var decode: Int64 = 0
        var sample = 0
        let chunkCounts = chunkSampleCounts(stbl.sampleToChunk, chunks: stbl.chunkOffsets.offsets.count)
        for (chunk, base) in stbl.chunkOffsets.offsets.enumerated() {
            let n = chunkCounts[chunk]
            guard sample + n <= sizes.count else { throw ExportError(.notOurFile, "\(path): track \(track.id)'s chunks hold more samples than stsz") }
            var dts: [Int64] = []
            for i in sample ..< sample + n {
                dts.append(decode)
                decode = TimeScaling.sum(decode, Int64(durations[i]))
            }
            table.appendChunk(offset: base, decodeTimes: dts, compositionOffsets: offsets.isEmpty ? Array(repeating: 0, count: n) : Array(offsets[sample ..< sample + n]),
                              sizes: Array(sizes[sample ..< sample + n]),
                              sync: (sample ..< sample + n).map { syncNumbers?.contains(UInt32($0 + 1)) ?? true },
                              lastDuration: n > 0 ? durations[sample + n - 1] : 0)
            sample += n
        }
        guard sample == sizes.count else { throw ExportError(.notOurFile, "\(path): track \(track.id)'s chunks hold fewer samples than stsz") }
        return samples(of: table, file: file) { TimeScaling.sum($0, shift) }
    }

    /// `stsc` runs expanded to a sample count per chunk.
    private static func chunkSampleCounts(_ stsc: SampleToChunkBox, chunks: Int) -> [Int] {
        var counts = [Int](repeating: 0, count: chunks)
        for (i, entry) in stsc.entries.enumerated() {
            let first = Int(entry.firstChunk) - 1
            let end = i + 1 < stsc.entries.count ? Int(stsc.entries[i + 1].firstChunk) - 1 : chunks
            guard first >= 0 else { continue }
            for c in first ..< min(max(first, end), chunks) { counts[c] = Int(entry.samplesPerChunk) }
        }
        return counts
    }

    /// Every sample of a table with its byte position, decode times moved by `place`.
    private static func samples(of table: TrackTable, file: Int, place: (Int64) -> Int64) -> [TimelineSample] {
        var out: [TimelineSample] = []
        out.reserveCapacity(table.sampleCount)
        let durations = table.durations
        let sync = Set(table.syncSampleNumbers)
        var index = 0
        for (chunk, offset) in table.chunkOffsets.enumerated() {
            var position = offset
            for _ in 0 ..< Int(table.samplesPerChunk[chunk]) {
                out.append(TimelineSample(file: file, offset: position, size: table.sizes[index], decodeTicks: place(table.decodeTimes[index]),
                                          compositionOffset: table.compositionOffsets[index], duration: durations[index],
                                          isSync: sync.contains(UInt32(index + 1))))
                position += UInt64(table.sizes[index])
                index += 1
            }
        }
        return out
    }
}

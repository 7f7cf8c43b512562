/// The new `mdat` of an export: the chosen samples interleaved by decode time in runs of
/// ``SessionExport/chunkNanos`` (one chunk per track and run), the sample tables that describe
/// them, and the source byte ranges to copy, merged where they are contiguous.
struct Layout {
    struct Cursor {
        var samples: ArraySlice<TimelineSample>
        var timescale: UInt32
        /// Track ticks of the export's decode origin: decode times in the table count from it.
        var base: Int64
    }

    var tracks: [Cursor]
    var tables: [TrackTable]
    var pieces: [SessionExport.Piece] = []
    /// Bytes of media laid out so far (the next chunk's offset inside the mdat payload).
    var position: UInt64 = 0

    init(tracks: [Cursor]) {
        self.tracks = tracks
        tables = Array(repeating: TrackTable(), count: tracks.count)
    }

    mutating func interleave(chunkNanos: Int64) {
        while let next = nextDecodeNanos() {
            let end = TimeScaling.sum(next, max(1, chunkNanos))
            let remaining = tracks.reduce(0) { $0 + $1.samples.count }
            for t in tracks.indices { takeChunk(track: t, before: end) }
            // Ticks coarser than the run (a timescale under 2 Hz, never ours) would stall here.
            guard tracks.reduce(0, { $0 + $1.samples.count }) < remaining else { return }
        }
    }

    /// The earliest decode time not yet laid out, over every track.
    private func nextDecodeNanos() -> Int64? {
        tracks.compactMap { cursor in cursor.samples.first.map { TimeScaling.nanos(ticks: $0.decodeTicks, timescale: cursor.timescale) } }.min()
    }

    /// One chunk: the track's samples decoded before `end`.
    private mutating func takeChunk(track t: Int, before end: Int64) {
        let limit = TimeScaling.ticks(nanos: end, timescale: tracks[t].timescale)
        let count = tracks[t].samples.prefix { $0.decodeTicks < limit }.count
        guard count > 0 else { return }
        let chunk = tracks[t].samples.prefix(count)
        tracks[t].samples.removeFirst(count)
        let base = tracks[t].base
        tables[t].appendChunk(offset: position, decodeTimes: chunk.map { TimeScaling.difference($0.decodeTicks, base) },
                              compositionOffsets: chunk.map(\.compositionOffset), sizes: chunk.map(\.size),
                              sync: chunk.map(\.isSync), lastDuration: chunk.last?.duration ?? 0)
        for sample in chunk {
            let length = UInt64(sample.size)
            if let last = pieces.last, last.file == sample.file, last.offset + last.length == sample.offset {
                pieces[pieces.count - 1].length += length
            } else {
                pieces.append(SessionExport.Piece(file: sample.file, offset: sample.offset, length: length))
            }
            position += length
        }
    }
}

/// Rebuilds per-track sample tables from a file's complete fragments (`tfdt` + `trun`): the
/// common ground of recovery and of resuming a recording after a crash.
struct FragmentTables {
    var tables: [TrackTable]
    var sampleCount = 0
    /// Every input sequence number the fragments' markers name.
    var sequences: Set<UInt64> = []
    /// The ack points (one per lane) recorded with the last fragment.
    var durable = DurablePoints()
    var lastFragmentSequence: UInt32 = 0

    /// Largest decode time (ticks) accepted from a file.
    static let maxDecodeTime: UInt64 = 1 << 62

    init(fragments: [MP4FileScanner.Fragment], tracks: [PreparedTrack]) throws(MuxerError) {
        // A damaged moov can name one track id twice (found by fuzzing: a trap in recovery).
        var indexByID: [UInt32: Int] = [:]
        for (index, track) in tracks.enumerated() {
            guard indexByID.updateValue(index, forKey: track.id) == nil else {
                throw MuxerError(.notOurFile, "the movie header names track \(track.id) twice")
            }
        }
        tables = Array(repeating: TrackTable(), count: tracks.count)
        for fragment in fragments {
            lastFragmentSequence = fragment.moof.header.sequenceNumber
            if let marker = fragment.sequenceMarker {
                sequences.formUnion(marker.sequences)
                durable.formMaximum(marker.durable)
            }
            for traf in fragment.moof.trackFragments {
                guard let t = indexByID[traf.header.trackID] else {
                    throw MuxerError(.notOurFile, "fragment \(fragment.moof.header.sequenceNumber) names unknown track \(traf.header.trackID)")
                }
                let run = traf.run.samples
                guard !run.isEmpty else { continue }
                var dts: [Int64] = []
                dts.reserveCapacity(run.count)
                // Decode times are bounded so that every later sum of ticks (end times, edit
                // lists, the next fragment's times) stays far from overflowing.
                guard traf.decodeTime.baseMediaDecodeTime <= Self.maxDecodeTime else {
                    throw MuxerError(.notOurFile, "fragment \(fragment.moof.header.sequenceNumber) has decode time \(traf.decodeTime.baseMediaDecodeTime)")
                }
                var time = Int64(traf.decodeTime.baseMediaDecodeTime)
                for s in run {
                    dts.append(time)
                    time += Int64(s.duration)
                    guard time <= Self.maxDecodeTime else {
                        throw MuxerError(.notOurFile, "fragment \(fragment.moof.header.sequenceNumber) runs past decode time 2^62")
                    }
                }
                // The scanner checked that the run lies inside the fragment's mdat.
                let base = Int64(clamping: traf.header.baseDataOffset ?? fragment.moofOffset)
                tables[t].appendChunk(offset: UInt64(clamping: TimeScaling.sum(base, Int64(traf.run.dataOffset))), decodeTimes: dts,
                                      compositionOffsets: run.map(\.compositionOffset), sizes: run.map(\.size),
                                      sync: run.map { $0.flags & 0x0001_0000 == 0 }, lastDuration: run[run.count - 1].duration)
                sampleCount += run.count
            }
        }
    }
}

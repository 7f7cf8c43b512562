/// Turns one fragment's worth of samples into `moof` + `mdat` bytes (§8.8). Each track's
/// samples form one contiguous run (one `trun`, later one chunk) in decode order; tracks
/// follow each other in track order.
struct FragmentAssembler {
    struct TrackRun {
        var trackIndex: Int
        var decodeTimes: [Int64]
        var compositionOffsets: [Int32]
        var sizes: [UInt32]
        var sync: [Bool]
        var durations: [UInt32]
        /// Offset of the run's first byte from the start of the `moof` (in `trun`); after
        /// assembly, from the start of the output (marker included).
        var dataOffset: Int = 0
    }

    struct Output {
        /// The fragment as it goes into the file, in order: the marker, `moof` and `mdat`
        /// header first, then every sample's payload as the muxer holds it. The payloads are
        /// not copied into one buffer: the file takes them in one gathered write
        /// (``RandomAccessFile/write(gathering:at:)``).
        var parts: [[UInt8]]
        var byteCount: Int
        var runs: [TrackRun]
        var sampleCount: Int
    }

    static func assemble(sequence: UInt32, tracks: [PreparedTrack], runs inputRuns: [TrackRun], payloads: [[PreparedSample]],
                         marker: SequenceMarkerBox) -> Output {
        var runs = inputRuns
        func trafs() -> [TrackFragmentBox] {
            runs.map { run in
                let samples = (0..<run.sizes.count).map { i in
                    TrackRunBox.Sample(duration: run.durations[i], size: run.sizes[i],
                                       flags: run.sync[i] ? TrackRunBox.syncSampleFlags : TrackRunBox.nonSyncSampleFlags,
                                       compositionOffset: run.compositionOffsets[i])
                }
                return TrackFragmentBox(header: TrackFragmentHeaderBox(trackID: tracks[run.trackIndex].id),
                                        decodeTime: TrackFragmentDecodeTimeBox(baseMediaDecodeTime: UInt64(max(0, run.decodeTimes[0]))),
                                        run: TrackRunBox(dataOffset: Int32(clamping: run.dataOffset), samples: samples))
            }
        }
        // The moof's size does not depend on the offsets it carries, so size it, then fill them in.
        let moofSize = MovieFragmentBox(sequenceNumber: sequence, trackFragments: trafs()).size
        let payloadBytes = runs.reduce(0) { $0 + $1.sizes.reduce(0) { $0 + Int($1) } }
        let mdat = MediaDataHeader(payloadSize: UInt64(payloadBytes))
        var offset = moofSize + mdat.headerSize
        for i in runs.indices {
            runs[i].dataOffset = offset
            offset += runs[i].sizes.reduce(0) { $0 + Int($1) }
        }
        var writer = ByteWriter(capacity: marker.size + moofSize + mdat.headerSize)
        marker.encode(into: &writer)
        let moofStart = writer.count
        MovieFragmentBox(sequenceNumber: sequence, trackFragments: trafs()).encode(into: &writer)
        for i in runs.indices { runs[i].dataOffset += moofStart }
        mdat.encode(into: &writer)
        let count = runs.reduce(0) { $0 + $1.sizes.count }
        var parts: [[UInt8]] = []
        parts.reserveCapacity(1 + count)
        parts.append(writer.bytes)
        for run in runs {
            for sample in payloads[run.trackIndex] { parts.append(sample.payload) }
        }
        return Output(parts: parts, byteCount: writer.count + payloadBytes, runs: runs, sampleCount: count)
    }
}

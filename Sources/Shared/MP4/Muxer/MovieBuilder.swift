/// Builds `moov` boxes: the init segment's (empty tables + `mvex`) while recording, and the
/// complete one at finalize — from the same `TrackTable`s whether they were collected live
/// or rebuilt from a crashed file's fragments.
enum MovieBuilder {
    /// Movie timescale. 90 kHz keeps empty edits within a fraction of an audio tick.
    static let movieTimescale: UInt32 = 90000

    /// Seconds between 1904-01-01 (ISO BMFF epoch) and 1970-01-01.
    static let epochOffset: Int64 = 2_082_844_800

    static func isoTime(_ unixSeconds: Int64) -> UInt64 { UInt64(max(0, TimeScaling.sum(unixSeconds, epochOffset))) }

    /// The inverse of ``isoTime(_:)`` for a time read from a file (saturating).
    static func unixTime(_ isoSeconds: UInt64) -> Int64 { TimeScaling.difference(Int64(clamping: isoSeconds), epochOffset) }

    static func initMovie(tracks: [PreparedTrack], creationTime: Int64, info: RecordingInfoBox) -> MovieBox {
        let created = isoTime(creationTime)
        let traks = tracks.map { track in
            trackBox(track, created: isoTime(track.configuration.creationTime ?? creationTime), sampleTable: SampleTableBox(description: SampleDescriptionBox(entries: [track.sampleEntry])),
                     trackDuration: 0, mediaDuration: 0, edits: nil)
        }
        return MovieBox(
            header: MovieHeaderBox(creationTime: created, timescale: movieTimescale, duration: 0, nextTrackID: nextTrackID(tracks)),
            tracks: traks,
            extends: MovieExtendsBox(trackExtends: tracks.map { TrackExtendsBox(trackID: $0.id) }),
            userData: UserDataBox(recordingInfo: info)
        )
    }

    /// The file's presentation origin: the earliest first PTS over all tracks, in source nanoseconds.
    static func presentationOrigin(tracks: [PreparedTrack], tables: [TrackTable], decodeOrigin: Int64) -> Int64? {
        var best: Int64?
        for (track, table) in zip(tracks, tables) {
            guard let p0 = table.earliestPresentationTime else { continue }
            let ns = TimeScaling.sum(decodeOrigin, TimeScaling.nanos(ticks: p0, timescale: track.timescale))
            best = min(best ?? ns, ns)
        }
        return best
    }

    /// The complete `moov` of a finished file. `offsetShift` moves every chunk offset (faststart).
    static func finalMovie(tracks: [PreparedTrack], tables: [TrackTable], creationTime: Int64,
                           info: RecordingInfoBox, offsetShift: Int64 = 0) -> MovieBox {
        var movieDuration: UInt64 = 0
        var traks: [TrackBox] = []
        for (track, table) in zip(tracks, tables) where table.sampleCount > 0 {
            let ts = track.timescale
            let d0 = table.decodeTimes[0]
            let p0 = table.earliestPresentationTime ?? d0
            // Saturating throughout: the origins and tables may come from a damaged file.
            let originTicks = TimeScaling.ticks(nanos: TimeScaling.difference(info.segmentOriginNanos, info.decodeOriginNanos), timescale: ts)
            var delay = TimeScaling.difference(p0, originTicks)
            var mediaTime = TimeScaling.sum(TimeScaling.difference(p0, d0), Int64(track.preSkip))
            if delay < 0 { // began before the origin (cannot happen for the earliest track): trim it
                mediaTime = TimeScaling.difference(mediaTime, delay)
                delay = 0
            }
            let presented = max(0, TimeScaling.difference(TimeScaling.difference(table.presentationEndTime, d0), mediaTime))
            let delayMovie = UInt64(TimeScaling.scale(delay, by: Int64(movieTimescale), over: Int64(ts)))
            let presentedMovie = UInt64(TimeScaling.scale(presented, by: Int64(movieTimescale), over: Int64(ts)))
            var edits: [EditListBox.Entry] = []
            if delayMovie > 0 { edits.append(.init(segmentDuration: delayMovie, mediaTime: -1)) }
            edits.append(.init(segmentDuration: presentedMovie, mediaTime: mediaTime))
            let trackDuration = delayMovie.addingReportingOverflow(presentedMovie).overflow ? UInt64.max : delayMovie + presentedMovie
            movieDuration = max(movieDuration, trackDuration)

            var stbl = SampleTableBox(description: SampleDescriptionBox(entries: [track.sampleEntry]))
            stbl.timeToSample = TimeToSampleBox(durations: table.durations)
            if table.hasCompositionOffsets { stbl.compositionOffsets = CompositionOffsetBox(offsets: table.compositionOffsets) }
            if track.syncSamples == .marked, !table.allSync { stbl.syncSamples = SyncSampleBox(sampleNumbers: table.syncSampleNumbers) }
            stbl.sampleToChunk = SampleToChunkBox(samplesPerChunk: table.samplesPerChunk)
            stbl.sampleSizes = SampleSizeBox(sizes: table.sizes)
            stbl.chunkOffsets = ChunkOffsetBox(offsets: table.chunkOffsets.map { UInt64(clamping: TimeScaling.sum(Int64(clamping: $0), offsetShift)) })
            stbl.rollGroup = track.codec.rollGroup(for: table)
            traks.append(trackBox(track, created: isoTime(track.configuration.creationTime ?? creationTime), sampleTable: stbl,
                                  trackDuration: trackDuration, mediaDuration: UInt64(max(0, TimeScaling.difference(table.endDecodeTime, d0))),
                                  edits: EditListBox(entries: edits)))
        }
        return MovieBox(
            header: MovieHeaderBox(creationTime: isoTime(creationTime), timescale: movieTimescale, duration: movieDuration, nextTrackID: nextTrackID(tracks)),
            tracks: traks,
            extends: nil,
            userData: UserDataBox(recordingInfo: info)
        )
    }

    private static func nextTrackID(_ tracks: [PreparedTrack]) -> UInt32 { (tracks.map(\.id).max() ?? 0) + 1 }

    private static func trackBox(_ track: PreparedTrack, created: UInt64, sampleTable: SampleTableBox,
                                 trackDuration: UInt64, mediaDuration: UInt64, edits: EditListBox?) -> TrackBox {
        let matrix = TransformMatrix.rotation(track.configuration.rotation, width: track.width, height: track.height)
        return TrackBox(
            header: TrackHeaderBox(trackID: track.id, creationTime: created, duration: trackDuration, isAudio: track.kind == .audio,
                                   width: track.width, height: track.height, matrix: matrix),
            edit: edits.map { EditBox(editList: $0) },
            media: MediaBox(
                header: MediaHeaderBox(creationTime: created, timescale: track.timescale, duration: mediaDuration),
                handler: HandlerBox(handlerType: track.kind.handlerType, name: track.configuration.label),
                information: MediaInformationBox(isAudio: track.kind == .audio, sampleTable: sampleTable)
            )
        )
    }
}

/// A session's tracks read from its files (in segment order): one run of samples per track
/// label on the session timeline, and the files they are in, kept open.
struct SessionSamples {
    var tracks: [TimelineTrack] = []
    var files = SourceFiles()
    /// The first file's creation time (seconds since 1970).
    var creationTime: Int64 = 0
    /// Where the finished files end on the session timeline, read or skipped.
    var recordedEnd: Int64?
    var skippedFiles = 0

    /// Reads every source, except finished segments wholly outside `window` (less a second
    /// before its start, for the sound's pre-roll; a segment starts at a keyframe, so no
    /// earlier one is needed for the pictures). More than `maxSamples` read is refused, which
    /// bounds the memory of the tables.
    static func load(_ sources: [SessionExport.Source], window: (from: Int64, to: Int64?)?, maxSamples: Int) throws(ExportError) -> SessionSamples {
        var loaded = SessionSamples()
        var read = 0
        var creationTime: Int64?
        for source in sources {
            let file: RandomAccessFile
            let scan: MP4FileScanner.Result
            do {
                file = try RandomAccessFile(path: source.path, mode: .readOnly)
                scan = try MP4FileScanner.scan(file: file, progress: nil)
            } catch {
                throw ExportError(.io, "\(source.path): \(error)")
            }
            // A live file opened at a split holds nothing until its init segment is written.
            if source.isLive, scan.movie == nil { continue }
            if creationTime == nil { creationTime = scan.movie.map { MovieBuilder.unixTime($0.header.creationTime) } }
            if let span = finishedSpan(scan) {
                loaded.recordedEnd = max(loaded.recordedEnd ?? span.upperBound, span.upperBound)
                if let window, window.to.map({ span.lowerBound >= $0 }) == true
                    || span.upperBound < TimeScaling.difference(window.from, 1_000_000_000) {
                    loaded.skippedFiles += 1
                    continue
                }
            }
            let index = loaded.files.append(file)
            for timeline in try SessionTimeline.tracks(of: scan, file: index, path: source.path) {
                let label = timeline.track.configuration.label
                if let at = loaded.tracks.firstIndex(where: { $0.track.configuration.label == label }) {
                    guard loaded.tracks[at].track.sampleEntry == timeline.track.sampleEntry else {
                        throw ExportError(.configurationChanges, "track '\(label)' changes its codec configuration in \(source.path) (a setting changed across a restart?): one MP4 track cannot hold both; ask for the ranges before and after it separately")
                    }
                    append(timeline.samples, to: &loaded.tracks[at].samples)
                } else {
                    loaded.tracks.append(timeline)
                }
                read += timeline.samples.count
            }
            guard read <= maxSamples else {
                throw ExportError(.tooLarge, "the range spans more than \(maxSamples) samples in the files it reaches, more than one request may read; ask for a shorter range")
            }
        }
        loaded.creationTime = creationTime ?? 0
        return loaded
    }

    /// The track with this label, or an error that lists the session's labels.
    func track(_ label: String) throws(ExportError) -> TimelineTrack {
        guard let track = tracks.first(where: { $0.track.configuration.label == label }) else {
            throw ExportError(.invalidRequest, "the session has no track '\(label)'; it has \(tracks.map(\.track.configuration.label).joined(separator: ", "))")
        }
        return track
    }

    /// Where a finished segment lies on the session timeline; nil for a file still being recorded.
    private static func finishedSpan(_ scan: MP4FileScanner.Result) -> ClosedRange<Int64>? {
        guard !scan.isFragmented, let movie = scan.movie, let info = movie.userData?.recordingInfo, movie.header.timescale > 0 else { return nil }
        let start = info.segmentStartNanos
        let end = TimeScaling.sum(start, TimeScaling.scale(Int64(clamping: movie.header.duration), by: 1_000_000_000, over: Int64(movie.header.timescale)))
        return start ... max(start, end)
    }

    /// Appends a later file's samples; decode times must keep rising (rounding at a file
    /// boundary can make two equal).
    private static func append(_ later: [TimelineSample], to samples: inout [TimelineSample]) {
        for var sample in later {
            if let last = samples.last, sample.decodeTicks <= last.decodeTicks { sample.decodeTicks = last.decodeTicks + 1 }
            samples.append(sample)
        }
    }
}

/// The source files of an export or a stream, opened once and read with positioned reads
/// (safe from several threads). A file renamed over (faststart) or removed after it was
/// opened still gives the bytes its tables described.
final class SourceFiles: @unchecked Sendable {
    private var files: [RandomAccessFile] = []

    /// Adds a file; returns its index.
    func append(_ file: RandomAccessFile) -> Int {
        files.append(file)
        return files.count - 1
    }

    func read(file: Int, offset: UInt64, count: Int) throws(ExportError) -> [UInt8] {
        let bytes: [UInt8]
        do { bytes = try files[file].read(count: count, at: offset) } catch { throw ExportError(.io, "\(error)") }
        guard bytes.count == count else { throw ExportError(.io, "a source file ended early at byte \(offset)") }
        return bytes
    }

    func close() { files.forEach { $0.close() } }
}

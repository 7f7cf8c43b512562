/// Finalizes a recording left behind by a crash: keeps every complete fragment, drops a torn
/// last one, and turns the file into a regular MP4 in place — the same end state a clean
/// `finish()` produces, because both build the final `moov` from the same tables.
public enum MP4Recovery {
    public struct Report: Sendable, Equatable {
        public var path: String
        public var alreadyFinalized: Bool
        public var fragmentsRecovered: Int
        public var samplesRecovered: Int
        /// Bytes after the last complete fragment that were cut away (the torn tail).
        public var bytesDiscarded: UInt64
        public var fileSize: UInt64
        /// Why the tail was torn, when it was.
        public var tornReason: String?
    }

    public static func recover(path: String, progress: ((UInt64, UInt64) -> Void)? = nil) throws(MuxerError) -> Report {
        let file = try RandomAccessFile(path: path, mode: .readWrite)
        let scan = try MP4FileScanner.scan(file: file, progress: progress)
        guard scan.fileType != nil else { throw MuxerError(.notOurFile, "\(path) does not start with an ftyp box") }
        guard let movie = scan.movie else {
            throw MuxerError(.noCompleteFragment, "\(path) has no complete moov: nothing was recorded durably" +
                             (scan.tornReason.map { " (\($0))" } ?? ""))
        }
        if scan.isProgressive {
            return Report(path: path, alreadyFinalized: true, fragmentsRecovered: 0,
                          samplesRecovered: movie.tracks.reduce(0) { $0 + $1.media.information.sampleTable.sampleSizes.count },
                          bytesDiscarded: 0, fileSize: scan.fileSize, tornReason: nil)
        }
        guard scan.boxes.count >= 2, scan.boxes[1].type == FreeSpaceBox.boxType, scan.boxes[1].size == 16,
              scan.boxes[1].offset == SegmentWriter.placeholderOffset else {
            throw MuxerError(.notOurFile, "\(path) is fragmented but lacks the 16-byte placeholder this recorder writes after ftyp")
        }
        guard let info = movie.userData?.recordingInfo else {
            throw MuxerError(.notOurFile, "\(path) has no recording info (mcrs) box")
        }
        guard !scan.fragments.isEmpty else {
            throw MuxerError(.noCompleteFragment, "\(path) holds no complete fragment" + (scan.tornReason.map { " (\($0))" } ?? ""))
        }
        let creationTime = MovieBuilder.unixTime(movie.header.creationTime)
        var tracks: [PreparedTrack] = []
        for trak in movie.tracks { tracks.append(try PreparedTrack(trak: trak, creationTime: creationTime)) }
        let rebuilt = try FragmentTables(fragments: scan.fragments, tracks: tracks)
        let tables = rebuilt.tables
        let samples = rebuilt.sampleCount
        var finalInfo = info
        finalInfo.segmentOriginNanos = MovieBuilder.presentationOrigin(tracks: tracks, tables: tables, decodeOrigin: info.decodeOriginNanos)
            ?? info.segmentOriginNanos
        let end = scan.endOfStructure
        try SegmentWriter.finalizeInPlace(file: file, tracks: tracks, tables: tables, info: finalInfo, fragmentsEnd: end, creationTime: creationTime)
        let size = try file.size()
        file.close()
        return Report(path: path, alreadyFinalized: false, fragmentsRecovered: scan.fragments.count, samplesRecovered: samples,
                      bytesDiscarded: scan.fileSize - end, fileSize: size, tornReason: scan.tornReason)
    }
}

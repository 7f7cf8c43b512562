/// A readable summary of an MP4 file, from its boxes alone (used by `recordctl inspect`,
/// `verify` and the demo). Works on our files and on other muxers' progressive files.
public struct MP4Inspection: Sendable {
    public struct Track: Sendable, Equatable {
        public var id: UInt32
        public var label: String
        public var kind: String
        public var codec: String
        public var width: Int
        public var height: Int
        public var rotation: Int
        public var timescale: UInt32
        public var sampleCount: Int
        public var keyframeCount: Int
        public var payloadBytes: UInt64
        /// Media duration and presentation start on the file timeline, seconds.
        public var durationSeconds: Double
        public var startSeconds: Double
        public var bitrate: Double { durationSeconds > 0 ? Double(payloadBytes) * 8 / durationSeconds : 0 }
        public var frameRate: Double { durationSeconds > 0 ? Double(sampleCount) / durationSeconds : 0 }
    }

    public var path: String
    public var fileSize: UInt64
    public var layout: String
    public var brands: [String]
    public var durationSeconds: Double
    public var fragmentCount: Int
    public var tracks: [Track]
    public var recordingInfo: RecordingInfoBox?
    public var problems: [String]

    public static func inspect(path: String, progress: ((UInt64, UInt64) -> Void)? = nil) throws(MuxerError) -> MP4Inspection {
        let scan = try MP4FileScanner.scan(path: path, progress: progress)
        var problems: [String] = []
        if scan.fileType == nil { problems.append("no ftyp box at the start") }
        guard let movie = scan.movie else {
            problems.append("no readable moov" + (scan.tornReason.map { ": \($0)" } ?? ""))
            return MP4Inspection(path: path, fileSize: scan.fileSize, layout: "unreadable", brands: [], durationSeconds: 0,
                                 fragmentCount: scan.fragments.count, tracks: [], recordingInfo: nil, problems: problems)
        }
        if let torn = scan.tornReason, let at = scan.tornAt {
            problems.append("structure ends at byte \(at) of \(scan.fileSize): \(torn)")
        }
        let layout: String
        if scan.isFragmented {
            // Ours are fragmented only while recording (or after a crash); other muxers' may be finished.
            layout = movie.userData?.recordingInfo != nil ? "fragmented (recording in progress or crashed; run recover)" : "fragmented"
        } else if let moovAt = scan.movieOffset, let mdat = scan.boxes.first(where: { $0.type == "mdat" }), moovAt < mdat.offset {
            layout = "progressive, moov first (faststart)"
        } else {
            layout = "progressive, moov at end"
        }
        var tracks: [Track] = []
        for trak in movie.tracks {
            var track = describe(trak, movieTimescale: movie.header.timescale)
            if scan.isFragmented { addFragments(scan.fragments, to: &track) }
            tracks.append(track)
        }
        let duration = movie.header.timescale > 0 ? Double(movie.header.duration) / Double(movie.header.timescale) : 0
        return MP4Inspection(path: path, fileSize: scan.fileSize, layout: layout,
                             brands: scan.fileType.map { [$0.majorBrand.description] + $0.compatibleBrands.map(\.description) } ?? [],
                             durationSeconds: scan.isFragmented ? tracks.map { $0.startSeconds + $0.durationSeconds }.max() ?? 0 : duration,
                             fragmentCount: scan.fragments.count, tracks: tracks, recordingInfo: movie.userData?.recordingInfo,
                             problems: problems)
    }

    static func describe(_ trak: TrackBox, movieTimescale: UInt32) -> Track {
        let stbl = trak.media.information.sampleTable
        let timescale = trak.media.header.timescale
        var codec = "unknown"
        var kind = trak.media.handler.handlerType.description
        if let entry = stbl.description.entries.first {
            if let known = TrackCodecs.writing(entry) {
                codec = known.name.rawValue
                kind = known.kind.rawValue
            } else if case let .other(type) = entry {
                codec = type.description
            }
        }
        let m = trak.header.matrix.values
        let rotation = m[1] == 0x10000 && m[3] == -0x10000 ? 90 : m[0] == -0x10000 && m[4] == -0x10000 ? 180 : m[1] == -0x10000 && m[3] == 0x10000 ? 270 : 0
        var start = 0.0
        if let first = trak.edit?.editList.entries.first, first.mediaTime == -1, movieTimescale > 0 {
            start = Double(first.segmentDuration) / Double(movieTimescale)
        }
        let sizes = stbl.sampleSizes
        return Track(id: trak.header.trackID, label: trak.media.handler.name, kind: kind, codec: codec,
                     width: Int(trak.header.width >> 16), height: Int(trak.header.height >> 16), rotation: rotation,
                     timescale: timescale, sampleCount: sizes.count,
                     keyframeCount: stbl.syncSamples?.sampleNumbers.count ?? sizes.count,
                     payloadBytes: sizes.totalBytes,
                     durationSeconds: timescale > 0 ? Double(trak.media.header.duration) / Double(timescale) : 0,
                     startSeconds: start)
    }

    static func addFragments(_ fragments: [MP4FileScanner.Fragment], to track: inout Track) {
        var first: UInt64?
        var end: UInt64 = 0
        for fragment in fragments {
            for traf in fragment.moof.trackFragments where traf.header.trackID == track.id {
                let samples = traf.run.samples
                track.sampleCount += samples.count
                track.keyframeCount += samples.filter { $0.flags & 0x0001_0000 == 0 }.count
                // Sizes and times come from the file: summed saturating, never trapping.
                track.payloadBytes = samples.reduce(track.payloadBytes) { $0.saturatingSum(UInt64($1.size)) }
                first = first ?? traf.decodeTime.baseMediaDecodeTime
                end = samples.reduce(traf.decodeTime.baseMediaDecodeTime) { $0.saturatingSum(UInt64($1.duration)) }
            }
        }
        if let first, track.timescale > 0 {
            track.durationSeconds = end > first ? Double(end - first) / Double(track.timescale) : 0
            track.startSeconds = Double(first) / Double(track.timescale)
        }
    }
}

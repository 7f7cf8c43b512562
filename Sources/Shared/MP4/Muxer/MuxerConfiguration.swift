/// Everything a recording needs to know up front. Defaults suit a live recorder.
public struct MuxerConfiguration: Sendable {
    public enum Durability: Sendable, Equatable {
        /// fsync after every fragment, before it is reported durable (the default).
        case fsyncEveryFragment
        /// fsync every fragment too, but only when the owner asks (``MP4Muxer/syncWrittenFragments()``),
        /// so that it can do it on a thread that may block: fragments are written at once and
        /// reported durable (the ack point moves) by that call. Files split off are finalized
        /// there as well, and a new file's directory entry is synced there.
        case fsyncWhenAsked
        /// Leave flushing to the OS; a fragment is reported once written. For benchmarks and tmpfs.
        case none

        /// Whether fragments and finished files are fsynced at all.
        public var syncsFiles: Bool { self != .none }
    }

    public enum FinalizeMode: Sendable, Equatable {
        /// Turn the fragmented file into a regular MP4 where it lies: no sample data is copied.
        case inPlace
        /// Also rewrite it with `moov` first (web "faststart"); copies the sample data once.
        case faststart
    }

    public var tracks: [TrackConfiguration]
    /// Where files go and how they are named: `<directory>/<baseName>.mp4`, or with
    /// segmenting `<baseName>-0001.mp4`, `<baseName>-0002.mp4`, …
    public var directory: String
    public var baseName: String
    /// Longest fragment, nanoseconds (1 s). Fragments are also cut at keyframes of the first
    /// video track once they hold `fragmentDuration / 4`.
    public var fragmentDuration: Int64 = 1_000_000_000
    /// How long (media time, ns) an empty track may hold the others back before it is
    /// declared stalled and interleaving continues without it.
    public var stallTimeout: Int64 = 500_000_000
    public var durability: Durability = .fsyncEveryFragment
    public var finalizeMode: FinalizeMode = .inPlace
    /// Largest accepted sample, bytes.
    public var maxSampleSize: Int = 16 << 20
    /// Bytes one track may queue while waiting for interleaving before it is released anyway.
    public var maxQueuedBytesPerTrack: Int = 64 << 20
    /// Start a new file once a file reaches this duration (ns) or size (bytes); the cut is at
    /// the next keyframe of the first video track. nil = one file.
    public var maxSegmentDuration: Int64?
    public var maxSegmentBytes: Int?
    /// Seconds since 1970 written as the creation time of the movie and its tracks.
    public var creationTime: Int64
    /// File permissions for recordings (owner read/write only by default).
    public var fileMode: UInt32 = 0o600

    public init(tracks: [TrackConfiguration], directory: String, baseName: String, creationTime: Int64) {
        self.tracks = tracks
        self.directory = directory
        self.baseName = baseName
        self.creationTime = creationTime
    }

    public var isSegmented: Bool { maxSegmentDuration != nil || maxSegmentBytes != nil }

    public func path(forSegment index: Int) -> String {
        guard isSegmented else { return directory + "/" + baseName + ".mp4" }
        let number = String(index + 1)
        return directory + "/" + baseName + "-" + String(repeating: "0", count: max(0, 4 - number.count)) + number + ".mp4"
    }
}

import Shared

/// How sessions record: what the server configuration decides for every muxer.
public struct SessionSettings: Sendable {
    public var fragmentDuration: Int64 = 1_000_000_000
    public var durability: MuxerConfiguration.Durability = .fsyncEveryFragment
    public var maxSegmentDuration: Int64?
    public var maxSegmentBytes: Int?
    /// Per-session bound on samples queued for interleaving (bytes per track).
    public var maxQueuedBytesPerTrack: Int = 64 << 20
    /// A track that fails (bad samples) fails the whole session instead of just itself.
    public var failSessionOnTrackError = false
    /// How long a session whose agent went away waits for a resume.
    public var resumeWindow: Duration = .seconds(60)

    public init() {}

    func muxerConfiguration(tracks: [TrackConfiguration], directory: String, baseName: String, creationTime: Int64) -> MuxerConfiguration {
        var config = MuxerConfiguration(tracks: tracks, directory: directory, baseName: baseName, creationTime: creationTime)
        config.fragmentDuration = fragmentDuration
        config.durability = durability
        config.maxSegmentDuration = maxSegmentDuration
        config.maxSegmentBytes = maxSegmentBytes
        config.maxQueuedBytesPerTrack = maxQueuedBytesPerTrack
        return config
    }
}

import Shared

/// How sessions record: what the server configuration decides for every muxer.
struct SessionSettings: Sendable {
    var fragmentDuration: Int64 = 1_000_000_000
    var durability: MuxerConfiguration.Durability = .fsyncEveryFragment
    var maxSegmentDuration: Int64?
    var maxSegmentBytes: Int?
    /// Per-session bound on samples queued for interleaving (bytes per track).
    var maxQueuedBytesPerTrack: Int = 64 << 20
    /// A track that fails (bad samples) fails the whole session instead of just itself.
    var failSessionOnTrackError = false
    /// How long a session whose agent went away waits for a resume.
    var resumeWindow: Duration = .seconds(60)

    init() {}

    /// What decides a session's files, pinned when it opens and used again when it resumes,
    /// whatever the configuration says after a restart (issue 13, finding 2: a restart with
    /// segmenting newly on looked for `recording-0001.mp4` where `recording.mp4` was).
    struct Pinned: Codable, Equatable {
        var fragmentDuration: Int64
        var durability: String
        var maxSegmentDuration: Int64?
        var maxSegmentBytes: Int?
        var maxQueuedBytesPerTrack: Int
    }

    var pinned: Pinned {
        Pinned(fragmentDuration: fragmentDuration, durability: durability == .none ? "none" : "fragment",
               maxSegmentDuration: maxSegmentDuration, maxSegmentBytes: maxSegmentBytes, maxQueuedBytesPerTrack: maxQueuedBytesPerTrack)
    }

    /// These settings with the file-deciding ones taken from `pinned`.
    func applying(_ pinned: Pinned) -> SessionSettings {
        var settings = self
        settings.fragmentDuration = pinned.fragmentDuration
        settings.durability = pinned.durability == "none" ? .none : .fsyncEveryFragment
        settings.maxSegmentDuration = pinned.maxSegmentDuration
        settings.maxSegmentBytes = pinned.maxSegmentBytes
        settings.maxQueuedBytesPerTrack = pinned.maxQueuedBytesPerTrack
        return settings
    }

    func muxerConfiguration(tracks: [TrackConfiguration], directory: String, baseName: String, creationTime: Int64) -> MuxerConfiguration {
        var config = MuxerConfiguration(tracks: tracks, directory: directory, baseName: baseName, creationTime: creationTime)
        config.fragmentDuration = fragmentDuration
        // Every fragment is fsynced before it is acknowledged, but by the session, on a storage
        // thread, rather than inside the muxer on the connection's event loop (RecordingSession.syncWritten).
        config.durability = durability == .none ? .none : .fsyncWhenAsked
        config.maxSegmentDuration = maxSegmentDuration
        config.maxSegmentBytes = maxSegmentBytes
        config.maxQueuedBytesPerTrack = maxQueuedBytesPerTrack
        return config
    }
}

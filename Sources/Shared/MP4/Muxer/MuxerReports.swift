/// A fragment that is now on disk (and fsynced, under the default durability).
public struct FragmentReport: Sendable, Equatable {
    public var segmentIndex: Int
    /// `mfhd` sequence number within its file, from 1.
    public var fragmentSequence: UInt32
    public var sampleCount: Int
    public var byteCount: Int
    /// Where the fragment ends in its file: the file's bytes up to here hold it and every
    /// fragment before it.
    public var fileEnd: UInt64 = 0
    /// Highest input sequence number contained in this fragment.
    public var highestSequence: UInt64
    /// Every sample appended with a sequence at or below this is durable (the ack point), in
    /// each lane (``SequenceLane``).
    public var durable: DurablePoints
    /// Lane 0's ack point: a recording from one sender.
    public var durableThroughSequence: UInt64 { durable.lane0 }
    /// Time spent writing the fragment, and making it durable (zero without fsync).
    public var writeDuration: Duration = .zero
    public var syncDuration: Duration = .zero
}

public struct TrackSummary: Sendable, Equatable {
    public var trackID: UInt32
    public var label: String
    public var sampleCount: Int
    public var payloadBytes: UInt64
    /// Media duration in the track's timescale.
    public var duration: Int64
    public var timescale: UInt32
}

/// One finished file.
public struct SegmentSummary: Sendable, Equatable {
    public var index: Int
    public var path: String
    /// Start of this file on the session timeline (0 for the first file), nanoseconds.
    public var startNanos: Int64
    public var durationNanos: Int64
    public var fileSize: UInt64
    public var fragmentCount: Int
    public var tracks: [TrackSummary]
}

public struct RecordingSummary: Sendable, Equatable {
    public var segments: [SegmentSummary]
    public var stalledTracks: Set<UInt32>
    /// Events of the final flush (the last fragments made durable, segments completed).
    public var events: [MuxerEvent] = []
}

public enum MuxerEvent: Sendable, Equatable {
    case fragmentDurable(FragmentReport)
    case trackStalled(trackID: UInt32)
    case trackResumed(trackID: UInt32)
    case segmentCompleted(SegmentSummary)
    /// A sample that could not be placed (it predates its file's time zero); never silent.
    case sampleRejected(trackID: UInt32, sequence: UInt64, reason: String)
    /// A resent sample the recording already holds (same sequence number); not written again.
    case duplicateIgnored(trackID: UInt32, sequence: UInt64)
}

/// One encoded sample handed to the muxer. Times are nanoseconds on the source's monotonic
/// clock; the muxer rebases them on the recording's time zero.
public struct MuxerSample: Sendable {
    public var trackID: UInt32
    /// Per-recording sequence number, strictly increasing across all tracks in append order
    /// within its lane (``SequenceLane``: lane 0 for a recording from one sender). Fragment
    /// reports name the sequences they made durable (what the server acknowledges).
    public var sequence: UInt64
    public var pts: Int64
    public var dts: Int64
    /// Nanoseconds; 0 = unknown (the next sample's DTS decides, or the previous delta).
    public var duration: Int64
    public var isKeyframe: Bool
    /// H.264: one access unit, Annex B or 4-byte length-prefixed. Opus: one packet.
    public var data: [UInt8]

    public init(trackID: UInt32, sequence: UInt64, pts: Int64, dts: Int64? = nil, duration: Int64 = 0, isKeyframe: Bool, data: [UInt8]) {
        self.trackID = trackID
        self.sequence = sequence
        self.pts = pts
        self.dts = dts ?? pts
        self.duration = duration
        self.isKeyframe = isKeyframe
        self.data = data
    }
}

/// A sample after validation: payload in MP4 form (length-prefixed NAL units, parameter
/// sets removed), still with source-clock times.
struct PreparedSample: Sendable {
    let trackIndex: Int
    let sequence: UInt64
    let pts: Int64
    let dts: Int64
    let duration: Int64
    let isSync: Bool
    let payload: [UInt8]
}

/// `mcrs`, our own box inside `moov/udta`: the timeline anchors that turn a fragmented file
/// back into exact presentation times during recovery, and that let segments of one session
/// be placed on one timeline. Readers that do not know it skip it (§4.2: unknown boxes are
/// ignored). Layout: version u8 (0), flags u24, then four big-endian fields.
public struct RecordingInfoBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "mcrs"
    /// Time zero of the whole session (earliest first PTS of all tracks), source-clock nanoseconds.
    public var sessionOriginNanos: Int64
    /// Time zero of this file (its earliest first PTS), source-clock nanoseconds.
    public var segmentOriginNanos: Int64
    /// The source time at which every track's `tfdt` is 0, source-clock nanoseconds.
    public var decodeOriginNanos: Int64
    /// 0 for the first file of a session, then 1, 2, … for later segments.
    public var segmentIndex: UInt32

    public init(sessionOriginNanos: Int64, segmentOriginNanos: Int64, decodeOriginNanos: Int64, segmentIndex: UInt32) {
        self.sessionOriginNanos = sessionOriginNanos
        self.segmentOriginNanos = segmentOriginNanos
        self.decodeOriginNanos = decodeOriginNanos
        self.segmentIndex = segmentIndex
    }

    /// Where this file starts on the session timeline.
    public var segmentStartNanos: Int64 { TimeScaling.difference(segmentOriginNanos, sessionOriginNanos) }

    public var payloadSize: Int { 4 + 24 + 4 }
    public func encodePayload(into w: inout ByteWriter) {
        w.fullBoxHeader(version: 0, flags: 0)
        w.i64(sessionOriginNanos)
        w.i64(segmentOriginNanos)
        w.i64(decodeOriginNanos)
        w.u32(segmentIndex)
    }
    public init(payload r: inout ByteReader) throws(MP4ParseError) {
        guard try r.fullBoxHeader().version == 0 else { throw .unsupported("mcrs version") }
        sessionOriginNanos = try r.i64("session_origin")
        segmentOriginNanos = try r.i64("segment_origin")
        decodeOriginNanos = try r.i64("decode_origin")
        segmentIndex = try r.u32("segment_index")
    }
}

/// `udta` (§8.10.1) holding our recording info.
public struct UserDataBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "udta"
    public var recordingInfo: RecordingInfoBox?
    public init(recordingInfo: RecordingInfoBox?) { self.recordingInfo = recordingInfo }
    public var payloadSize: Int { recordingInfo.sizeOrZero }
    public func encodePayload(into w: inout ByteWriter) { recordingInfo?.encode(into: &w) }
    public init(payload r: inout ByteReader) throws(MP4ParseError) {
        recordingInfo = try decodeChild(RecordingInfoBox.self, in: try r.childBoxes())
    }
}

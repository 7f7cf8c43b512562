/// `elst` inside `edts` (§8.6.6). segment_duration is in the movie timescale, media_time in
/// the media timescale; media_time −1 is an empty edit (the track starts later).
public struct EditListBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "elst"
    public struct Entry: Equatable, Sendable {
        public var segmentDuration: UInt64
        public var mediaTime: Int64
        public init(segmentDuration: UInt64, mediaTime: Int64) {
            self.segmentDuration = segmentDuration
            self.mediaTime = mediaTime
        }
    }
    public var entries: [Entry]

    public init(entries: [Entry]) { self.entries = entries }

    var version: UInt8 {
        entries.contains { $0.segmentDuration > UInt64(UInt32.max) || $0.mediaTime > Int64(Int32.max) || $0.mediaTime < Int64(Int32.min) } ? 1 : 0
    }

    public var payloadSize: Int { 8 + entries.count * (version == 1 ? 20 : 12) }

    public func encodePayload(into w: inout ByteWriter) {
        let v = version
        w.fullBoxHeader(version: v, flags: 0)
        w.u32(UInt32(entries.count))
        for e in entries {
            if v == 1 { w.u64(e.segmentDuration); w.i64(e.mediaTime) } else { w.u32(UInt32(e.segmentDuration)); w.i32(Int32(e.mediaTime)) }
            w.i16(1) // media_rate_integer
            w.i16(0)
        }
    }

    public init(payload r: inout ByteReader) throws(MP4ParseError) {
        let (v, _) = try r.fullBoxHeader()
        let n = try r.readCount("elst entries", entrySize: v == 1 ? 20 : 12)
        entries = []
        for _ in 0..<n {
            if v == 1 {
                entries.append(Entry(segmentDuration: try r.u64(), mediaTime: try r.i64()))
            } else {
                entries.append(Entry(segmentDuration: UInt64(try r.u32()), mediaTime: Int64(try r.i32())))
            }
            try r.skip(4)
        }
    }
}

/// `edts` (§8.6.5): holds the edit list.
public struct EditBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "edts"
    public var editList: EditListBox
    public init(editList: EditListBox) { self.editList = editList }
    public var payloadSize: Int { editList.size }
    public func encodePayload(into w: inout ByteWriter) { editList.encode(into: &w) }
    public init(payload r: inout ByteReader) throws(MP4ParseError) {
        editList = try requireChild(EditListBox.self, in: try r.childBoxes(), parent: "edts")
    }
}

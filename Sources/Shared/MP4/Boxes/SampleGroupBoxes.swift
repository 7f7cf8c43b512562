/// `sgpd` version 1 with one 'roll' entry (§10.1): Opus needs ~80 ms of pre-roll after a
/// seek, expressed in packets (−4 for 20 ms packets), as the Opus-in-ISOBMFF spec asks.
public struct RollGroupDescriptionBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "sgpd"
    public var rollDistance: Int16
    public init(rollDistance: Int16) { self.rollDistance = rollDistance }
    public var payloadSize: Int { 4 + 4 + 4 + 4 + 2 }
    public func encodePayload(into w: inout ByteWriter) {
        w.fullBoxHeader(version: 1, flags: 0)
        w.fourCC("roll")
        w.u32(2) // default_length
        w.u32(1)
        w.i16(rollDistance)
    }
    public init(payload r: inout ByteReader) throws(MP4ParseError) {
        _ = try r.fullBoxHeader()
        guard try r.fourCC("grouping_type") == "roll" else { throw .unsupported("sgpd grouping other than roll") }
        try r.skip(8)
        rollDistance = try r.i16("roll_distance")
    }
}

/// `sbgp` (§8.9.2) mapping samples to the roll group: the first packets after the start
/// are not in it (nothing to pre-roll from), the rest are.
public struct SampleToGroupBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "sbgp"
    public struct Entry: Equatable, Sendable {
        public var sampleCount: UInt32
        public var groupDescriptionIndex: UInt32
        public init(sampleCount: UInt32, groupDescriptionIndex: UInt32) {
            self.sampleCount = sampleCount
            self.groupDescriptionIndex = groupDescriptionIndex
        }
    }
    public var entries: [Entry]
    public init(entries: [Entry]) { self.entries = entries }
    public var payloadSize: Int { 4 + 4 + 4 + 8 * entries.count }
    public func encodePayload(into w: inout ByteWriter) {
        w.fullBoxHeader(version: 0, flags: 0)
        w.fourCC("roll")
        w.u32(UInt32(entries.count))
        for e in entries { w.u32(e.sampleCount); w.u32(e.groupDescriptionIndex) }
    }
    public init(payload r: inout ByteReader) throws(MP4ParseError) {
        _ = try r.fullBoxHeader()
        try r.skip(4)
        let n = try r.readCount("sbgp entries", entrySize: 8)
        entries = []
        for _ in 0..<n { entries.append(Entry(sampleCount: try r.u32(), groupDescriptionIndex: try r.u32())) }
    }
}

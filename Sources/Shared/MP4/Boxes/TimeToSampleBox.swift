/// `stts` (§8.6.1.2): run-length coded decode deltas.
public struct TimeToSampleBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "stts"
    public struct Entry: Equatable, Sendable {
        public var count: UInt32
        public var delta: UInt32
        public init(count: UInt32, delta: UInt32) { self.count = count; self.delta = delta }
    }
    public var entries: [Entry]

    public init(entries: [Entry]) { self.entries = entries }

    /// Run-length codes per-sample durations.
    public init(durations: [UInt32]) {
        var entries: [Entry] = []
        for d in durations {
            if let last = entries.last, last.delta == d { entries[entries.count - 1].count += 1 } else {
                entries.append(Entry(count: 1, delta: d))
            }
        }
        self.entries = entries
    }

    public var payloadSize: Int { 8 + 8 * entries.count }

    public func encodePayload(into w: inout ByteWriter) {
        w.fullBoxHeader(version: 0, flags: 0)
        w.u32(UInt32(entries.count))
        for e in entries { w.u32(e.count); w.u32(e.delta) }
    }

    public init(payload r: inout ByteReader) throws(MP4ParseError) {
        _ = try r.fullBoxHeader()
        let n = try r.readCount("stts entries", entrySize: 8)
        entries = []
        entries.reserveCapacity(n)
        for _ in 0..<n { entries.append(Entry(count: try r.u32(), delta: try r.u32())) }
    }
}

/// `ctts` (§8.6.1.3): run-length coded composition offsets (PTS − DTS). Version 0
/// (unsigned) since we never write a PTS before its DTS; version 1 is read too.
public struct CompositionOffsetBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "ctts"
    public struct Entry: Equatable, Sendable {
        public var count: UInt32
        public var offset: Int32
        public init(count: UInt32, offset: Int32) { self.count = count; self.offset = offset }
    }
    public var entries: [Entry]

    public init(entries: [Entry]) { self.entries = entries }

    public init(offsets: [Int32]) {
        var entries: [Entry] = []
        for o in offsets {
            if let last = entries.last, last.offset == o { entries[entries.count - 1].count += 1 } else {
                entries.append(Entry(count: 1, offset: o))
            }
        }
        self.entries = entries
    }

    var version: UInt8 { entries.contains { $0.offset < 0 } ? 1 : 0 }
    public var payloadSize: Int { 8 + 8 * entries.count }

    public func encodePayload(into w: inout ByteWriter) {
        w.fullBoxHeader(version: version, flags: 0)
        w.u32(UInt32(entries.count))
        for e in entries { w.u32(e.count); w.i32(e.offset) }
    }

    public init(payload r: inout ByteReader) throws(MP4ParseError) {
        _ = try r.fullBoxHeader()
        let n = try r.readCount("ctts entries", entrySize: 8)
        entries = []
        entries.reserveCapacity(n)
        for _ in 0..<n { entries.append(Entry(count: try r.u32(), offset: try r.i32())) }
    }
}

/// `stss` (§8.6.2): 1-based numbers of sync samples. Absent means every sample is sync.
public struct SyncSampleBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "stss"
    public var sampleNumbers: [UInt32]

    public init(sampleNumbers: [UInt32]) { self.sampleNumbers = sampleNumbers }

    public var payloadSize: Int { 8 + 4 * sampleNumbers.count }

    public func encodePayload(into w: inout ByteWriter) {
        w.fullBoxHeader(version: 0, flags: 0)
        w.u32(UInt32(sampleNumbers.count))
        sampleNumbers.forEach { w.u32($0) }
    }

    public init(payload r: inout ByteReader) throws(MP4ParseError) {
        _ = try r.fullBoxHeader()
        let n = try r.readCount("stss entries", entrySize: 4)
        sampleNumbers = []
        sampleNumbers.reserveCapacity(n)
        for _ in 0..<n { sampleNumbers.append(try r.u32()) }
    }
}

/// `stsc` (§8.7.4): which chunks hold how many samples, run-length coded by chunk.
public struct SampleToChunkBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "stsc"
    public struct Entry: Equatable, Sendable {
        public var firstChunk: UInt32
        public var samplesPerChunk: UInt32
        public var sampleDescriptionIndex: UInt32
        public init(firstChunk: UInt32, samplesPerChunk: UInt32, sampleDescriptionIndex: UInt32 = 1) {
            self.firstChunk = firstChunk
            self.samplesPerChunk = samplesPerChunk
            self.sampleDescriptionIndex = sampleDescriptionIndex
        }
    }
    public var entries: [Entry]

    public init(entries: [Entry]) { self.entries = entries }

    /// Codes a list of per-chunk sample counts, one entry per change.
    public init(samplesPerChunk counts: [UInt32]) {
        var entries: [Entry] = []
        for (i, n) in counts.enumerated() where entries.last?.samplesPerChunk != n {
            entries.append(Entry(firstChunk: UInt32(i + 1), samplesPerChunk: n))
        }
        self.entries = entries
    }

    public var payloadSize: Int { 8 + 12 * entries.count }

    public func encodePayload(into w: inout ByteWriter) {
        w.fullBoxHeader(version: 0, flags: 0)
        w.u32(UInt32(entries.count))
        for e in entries { w.u32(e.firstChunk); w.u32(e.samplesPerChunk); w.u32(e.sampleDescriptionIndex) }
    }

    public init(payload r: inout ByteReader) throws(MP4ParseError) {
        _ = try r.fullBoxHeader()
        let n = try r.readCount("stsc entries", entrySize: 12)
        entries = []
        for _ in 0..<n { entries.append(Entry(firstChunk: try r.u32(), samplesPerChunk: try r.u32(), sampleDescriptionIndex: try r.u32())) }
    }
}

/// `stsz` (§8.7.3.2): sample sizes; a single shared size when all are equal.
public struct SampleSizeBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "stsz"
    public var sizes: [UInt32]

    public init(sizes: [UInt32]) { self.sizes = sizes }

    /// The shared size, when there is one to write. Never 0: `sample_size` 0 means "a table
    /// follows" (§8.7.3.2), so samples all of size 0 (a damaged file recovered; found by
    /// fuzzing) are written as a table of zeros, not as a header no reader can tell apart.
    var uniformSize: UInt32? {
        guard let first = sizes.first, first != 0, sizes.allSatisfy({ $0 == first }) else { return nil }
        return first
    }

    public var payloadSize: Int { 12 + (uniformSize == nil ? 4 * sizes.count : 0) }

    public func encodePayload(into w: inout ByteWriter) {
        w.fullBoxHeader(version: 0, flags: 0)
        if let uniform = uniformSize {
            w.u32(uniform)
            w.u32(UInt32(sizes.count))
        } else {
            w.u32(0)
            w.u32(UInt32(sizes.count))
            sizes.forEach { w.u32($0) }
        }
    }

    public init(payload r: inout ByteReader) throws(MP4ParseError) {
        _ = try r.fullBoxHeader()
        let uniform = try r.u32("sample_size")
        let count = try r.u32("sample_count")
        if uniform != 0 {
            // Materialised per sample, so bounded: 20 M samples is a week of 30 fps video.
            guard count <= 20_000_000 else { throw .implausibleCount(field: "stsz sample_count", count: Int(count), available: r.remaining) }
            sizes = Array(repeating: uniform, count: Int(count))
        } else {
            let n = try r.checkedCount(count, entrySize: 4, "stsz entries")
            sizes = []
            sizes.reserveCapacity(n)
            for _ in 0..<n { sizes.append(try r.u32()) }
        }
    }
}

/// `stco` / `co64` (§8.7.5): absolute file offsets of chunks. `co64` is chosen as soon as
/// any offset exceeds 32 bits (files over 4 GiB).
public struct ChunkOffsetBox: MP4Box, Equatable {
    public var offsets: [UInt64]

    public init(offsets: [UInt64]) { self.offsets = offsets }

    public var is64Bit: Bool { (offsets.last ?? 0) > UInt64(UInt32.max) || offsets.contains { $0 > UInt64(UInt32.max) } }
    public var type: FourCC { is64Bit ? "co64" : "stco" }
    public var payloadSize: Int { 8 + (is64Bit ? 8 : 4) * offsets.count }

    public func encodePayload(into w: inout ByteWriter) {
        w.fullBoxHeader(version: 0, flags: 0)
        w.u32(UInt32(offsets.count))
        if is64Bit { offsets.forEach { w.u64($0) } } else { offsets.forEach { w.u32(UInt32($0)) } }
    }

    public init(payload r: inout ByteReader, is64Bit: Bool) throws(MP4ParseError) {
        _ = try r.fullBoxHeader()
        let n = try r.readCount("chunk offsets", entrySize: is64Bit ? 8 : 4)
        offsets = []
        offsets.reserveCapacity(n)
        for _ in 0..<n { offsets.append(is64Bit ? try r.u64() : UInt64(try r.u32())) }
    }
}

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
///
/// A shared size read from a file stays a size and a count: a 200-byte box may claim
/// 4 billion samples, and nothing here should allocate or loop per sample for it (found by
/// fuzzing: 80 MB arrays and minute-long sums per input). ``count``, ``totalBytes`` and
/// ``bytes(in:)`` answer in O(1) for it.
public struct SampleSizeBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "stsz"

    enum Storage: Equatable {
        /// Every one of `count` samples has `size` bytes (never 0; see ``uniformSize``).
        case shared(size: UInt32, count: Int)
        /// One size per sample.
        case table([UInt32])
    }

    var storage: Storage

    public init(sizes: [UInt32]) { storage = .table(sizes) }

    /// `count` samples of `size` bytes each.
    public init(sharedSize size: UInt32, count: Int) {
        storage = size == 0 ? .table(Array(repeating: 0, count: count)) : .shared(size: size, count: count)
    }

    public var count: Int {
        switch storage {
        case let .shared(_, count): count
        case let .table(sizes): sizes.count
        }
    }

    /// The size of sample `index` (0-based).
    public subscript(index: Int) -> UInt32 {
        switch storage {
        case let .shared(size, count): precondition(index >= 0 && index < count, "sample \(index) of \(count)"); return size
        case let .table(sizes): return sizes[index]
        }
    }

    /// The bytes of samples `range` (0-based), summed without overflow.
    public func bytes(in range: Range<Int>) -> UInt64 {
        switch storage {
        case let .shared(size, _): UInt64(size) * UInt64(range.count)
        case let .table(sizes): sizes[range].reduce(UInt64(0)) { $0 + UInt64($1) }
        }
    }

    /// The bytes of every sample.
    public var totalBytes: UInt64 { bytes(in: 0..<count) }

    /// One size per sample. Allocates `count` entries: for tables this program wrote, not for
    /// a box read from an untrusted file.
    public var sizes: [UInt32] {
        switch storage {
        case let .shared(size, count): Array(repeating: size, count: count)
        case let .table(sizes): sizes
        }
    }

    /// The shared size, when there is one to write. Never 0: `sample_size` 0 means "a table
    /// follows" (§8.7.3.2), so samples all of size 0 (a damaged file recovered; found by
    /// fuzzing) are written as a table of zeros, not as a header no reader can tell apart.
    var uniformSize: UInt32? {
        switch storage {
        case let .shared(size, count): return count > 0 ? size : nil
        case let .table(sizes):
            guard let first = sizes.first, first != 0, sizes.allSatisfy({ $0 == first }) else { return nil }
            return first
        }
    }

    /// Equal when they describe the same sizes, however they are stored.
    public static func == (a: SampleSizeBox, b: SampleSizeBox) -> Bool {
        switch (a.storage, b.storage) {
        case let (.shared(s1, c1), .shared(s2, c2)): return (s1 == s2 || c1 == 0) && c1 == c2
        case let (.table(t1), .table(t2)): return t1 == t2
        case let (.shared(size, count), .table(table)), let (.table(table), .shared(size, count)):
            return table.count == count && table.allSatisfy { $0 == size }
        }
    }

    public var payloadSize: Int { 12 + (uniformSize == nil ? 4 * count : 0) }

    public func encodePayload(into w: inout ByteWriter) {
        w.fullBoxHeader(version: 0, flags: 0)
        if let uniform = uniformSize {
            w.u32(uniform)
            w.u32(UInt32(count))
        } else {
            w.u32(0)
            w.u32(UInt32(count))
            if case let .table(sizes) = storage { sizes.forEach { w.u32($0) } }
        }
    }

    public init(payload r: inout ByteReader) throws(MP4ParseError) {
        _ = try r.fullBoxHeader()
        let uniform = try r.u32("sample_size")
        let count = try r.u32("sample_count")
        if uniform != 0 {
            storage = .shared(size: uniform, count: Int(count))
        } else {
            let n = try r.checkedCount(count, entrySize: 4, "stsz entries")
            var sizes: [UInt32] = []
            sizes.reserveCapacity(n)
            for _ in 0..<n { sizes.append(try r.u32()) }
            storage = .table(sizes)
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

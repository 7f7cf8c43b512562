/// `trex` (§8.8.3): per-track fragment defaults. We write every field explicitly in `trun`,
/// so the defaults are neutral.
public struct TrackExtendsBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "trex"
    public var trackID: UInt32
    public init(trackID: UInt32) { self.trackID = trackID }
    public var payloadSize: Int { 24 }
    public func encodePayload(into w: inout ByteWriter) {
        w.fullBoxHeader(version: 0, flags: 0)
        w.u32(trackID)
        w.u32(1) // default_sample_description_index
        w.u32(0); w.u32(0); w.u32(0)
    }
    public init(payload r: inout ByteReader) throws(MP4ParseError) {
        _ = try r.fullBoxHeader()
        trackID = try r.u32("track_ID")
        try r.skip(16)
    }
}

/// `mvex` (§8.8.1): its presence tells readers that fragments follow.
public struct MovieExtendsBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "mvex"
    public var trackExtends: [TrackExtendsBox]
    public init(trackExtends: [TrackExtendsBox]) { self.trackExtends = trackExtends }
    public var payloadSize: Int { trackExtends.reduce(0) { $0 + $1.size } }
    public func encodePayload(into w: inout ByteWriter) { trackExtends.forEach { $0.encode(into: &w) } }
    public init(payload r: inout ByteReader) throws(MP4ParseError) {
        trackExtends = try decodeChildren(TrackExtendsBox.self, in: try r.childBoxes())
    }
}

/// `mfhd` (§8.8.5): fragment sequence number, from 1.
public struct MovieFragmentHeaderBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "mfhd"
    public var sequenceNumber: UInt32
    public init(sequenceNumber: UInt32) { self.sequenceNumber = sequenceNumber }
    public var payloadSize: Int { 8 }
    public func encodePayload(into w: inout ByteWriter) {
        w.fullBoxHeader(version: 0, flags: 0)
        w.u32(sequenceNumber)
    }
    public init(payload r: inout ByteReader) throws(MP4ParseError) {
        _ = try r.fullBoxHeader()
        sequenceNumber = try r.u32("sequence_number")
    }
}

/// `tfhd` (§8.8.7). We always set default-base-is-moof (0x020000) and nothing else, so
/// data offsets are relative to the enclosing `moof` and a fragment is self-contained.
public struct TrackFragmentHeaderBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "tfhd"
    public static let defaultBaseIsMoof: UInt32 = 0x02_0000
    public var trackID: UInt32
    public var flags: UInt32
    public var baseDataOffset: UInt64?

    public init(trackID: UInt32) {
        self.trackID = trackID
        flags = Self.defaultBaseIsMoof
    }

    public var payloadSize: Int { 8 }
    public func encodePayload(into w: inout ByteWriter) {
        w.fullBoxHeader(version: 0, flags: flags)
        w.u32(trackID)
    }

    public init(payload r: inout ByteReader) throws(MP4ParseError) {
        (_, flags) = try r.fullBoxHeader()
        trackID = try r.u32("track_ID")
        if flags & 0x1 != 0 { baseDataOffset = try r.u64("base_data_offset") }
        // Optional defaults we never write; skip them when reading other muxers' files.
        for bit: UInt32 in [0x2, 0x8, 0x10, 0x20] where flags & bit != 0 { try r.skip(4, "tfhd default") }
    }
}

/// `tfdt` version 1 (§8.8.12): decode time of the fragment's first sample of this track.
public struct TrackFragmentDecodeTimeBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "tfdt"
    public var baseMediaDecodeTime: UInt64
    public init(baseMediaDecodeTime: UInt64) { self.baseMediaDecodeTime = baseMediaDecodeTime }
    public var payloadSize: Int { 12 }
    public func encodePayload(into w: inout ByteWriter) {
        w.fullBoxHeader(version: 1, flags: 0)
        w.u64(baseMediaDecodeTime)
    }
    public init(payload r: inout ByteReader) throws(MP4ParseError) {
        let (v, _) = try r.fullBoxHeader()
        baseMediaDecodeTime = v == 1 ? try r.u64("baseMediaDecodeTime") : UInt64(try r.u32("baseMediaDecodeTime"))
    }
}

/// `trun` (§8.8.8). Flags are chosen from the whole sample list before anything is written:
/// data offset, per-sample duration, size and flags always; composition offsets only when
/// some sample has one (version 1, signed, only if one is negative).
public struct TrackRunBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "trun"
    public struct Sample: Equatable, Sendable {
        public var duration: UInt32
        public var size: UInt32
        public var flags: UInt32
        public var compositionOffset: Int32
        public init(duration: UInt32, size: UInt32, flags: UInt32, compositionOffset: Int32) {
            self.duration = duration
            self.size = size
            self.flags = flags
            self.compositionOffset = compositionOffset
        }
    }

    public static let syncSampleFlags: UInt32 = 0x0200_0000
    /// More samples than any fragment of ours (or a sane muxer's) holds.
    public static let maxSamples = 1 << 20
    public static let nonSyncSampleFlags: UInt32 = 0x0101_0000

    public var dataOffset: Int32
    public var samples: [Sample]

    public init(dataOffset: Int32, samples: [Sample]) {
        self.dataOffset = dataOffset
        self.samples = samples
    }

    var hasCompositionOffsets: Bool { samples.contains { $0.compositionOffset != 0 } }
    var flags: UInt32 { 0x1 | 0x100 | 0x200 | 0x400 | (hasCompositionOffsets ? 0x800 : 0) }
    var version: UInt8 { samples.contains { $0.compositionOffset < 0 } ? 1 : 0 }

    public var payloadSize: Int { 8 + 4 + samples.count * (hasCompositionOffsets ? 16 : 12) }

    public func encodePayload(into w: inout ByteWriter) {
        let withCTS = hasCompositionOffsets
        w.fullBoxHeader(version: version, flags: flags)
        w.u32(UInt32(samples.count))
        w.i32(dataOffset)
        for s in samples {
            w.u32(s.duration)
            w.u32(s.size)
            w.u32(s.flags)
            if withCTS { w.i32(s.compositionOffset) }
        }
    }

    /// Reads any `trun`, including flag combinations we never write (first-sample flags,
    /// omitted fields), so `recordctl inspect` works on other muxers' files too.
    public init(payload r: inout ByteReader) throws(MP4ParseError) {
        try self.init(payload: &r, defaultDuration: 0, defaultSize: 0, defaultFlags: 0)
    }

    public init(payload r: inout ByteReader, defaultDuration: UInt32, defaultSize: UInt32, defaultFlags: UInt32) throws(MP4ParseError) {
        let (_, flags) = try r.fullBoxHeader()
        let fieldBytes = [0x100, 0x200, 0x400, 0x800].filter { flags & UInt32($0) != 0 }.count * 4
        let count = try r.readCount("trun samples", entrySize: fieldBytes)
        // With every field defaulted the entries take no bytes, so bytes left bound nothing.
        guard count <= Self.maxSamples else {
            throw .implausibleCount(field: "trun sample_count", count: count, available: r.remaining)
        }
        dataOffset = flags & 0x1 != 0 ? try r.i32("data_offset") : 0
        let firstFlags: UInt32? = flags & 0x4 != 0 ? try r.u32("first_sample_flags") : nil
        samples = []
        samples.reserveCapacity(count)
        for i in 0..<count {
            let duration = flags & 0x100 != 0 ? try r.u32("sample_duration") : defaultDuration
            let size = flags & 0x200 != 0 ? try r.u32("sample_size") : defaultSize
            var sampleFlags = flags & 0x400 != 0 ? try r.u32("sample_flags") : defaultFlags
            if i == 0, let firstFlags { sampleFlags = firstFlags }
            let cts = flags & 0x800 != 0 ? try r.i32("sample_composition_time_offset") : 0
            samples.append(Sample(duration: duration, size: size, flags: sampleFlags, compositionOffset: cts))
        }
    }
}

/// `traf` (§8.8.6): one track's run within a fragment.
public struct TrackFragmentBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "traf"
    public var header: TrackFragmentHeaderBox
    public var decodeTime: TrackFragmentDecodeTimeBox
    public var run: TrackRunBox

    public init(header: TrackFragmentHeaderBox, decodeTime: TrackFragmentDecodeTimeBox, run: TrackRunBox) {
        self.header = header
        self.decodeTime = decodeTime
        self.run = run
    }

    public var payloadSize: Int { header.size + decodeTime.size + run.size }
    public func encodePayload(into w: inout ByteWriter) {
        header.encode(into: &w)
        decodeTime.encode(into: &w)
        run.encode(into: &w)
    }

    public init(payload r: inout ByteReader) throws(MP4ParseError) {
        let children = try r.childBoxes()
        header = try requireChild(TrackFragmentHeaderBox.self, in: children, parent: "traf")
        decodeTime = try requireChild(TrackFragmentDecodeTimeBox.self, in: children, parent: "traf")
        let runs = try decodeChildren(TrackRunBox.self, in: children)
        guard runs.count == 1, let only = runs.first else { throw .unsupported("traf with \(runs.count) trun boxes") }
        run = only
    }
}

/// `moof` (§8.8.4): one fragment's metadata.
public struct MovieFragmentBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "moof"
    public var header: MovieFragmentHeaderBox
    public var trackFragments: [TrackFragmentBox]

    public init(sequenceNumber: UInt32, trackFragments: [TrackFragmentBox]) {
        header = MovieFragmentHeaderBox(sequenceNumber: sequenceNumber)
        self.trackFragments = trackFragments
    }

    public var payloadSize: Int { header.size + trackFragments.reduce(0) { $0 + $1.size } }
    public func encodePayload(into w: inout ByteWriter) {
        header.encode(into: &w)
        trackFragments.forEach { $0.encode(into: &w) }
    }

    public init(payload r: inout ByteReader) throws(MP4ParseError) {
        let children = try r.childBoxes()
        header = try requireChild(MovieFragmentHeaderBox.self, in: children, parent: "moof")
        trackFragments = try decodeChildren(TrackFragmentBox.self, in: children)
    }
}

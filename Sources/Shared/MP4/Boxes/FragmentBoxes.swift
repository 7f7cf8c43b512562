/// `trex` (§8.8.3): per-track fragment defaults. We write every field explicitly in `trun`,
/// so ours are neutral (zero); other muxers' defaults are kept so their fragments read right.
public struct TrackExtendsBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "trex"
    public var trackID: UInt32
    public var defaultSampleDescriptionIndex: UInt32 = 1
    public var defaultSampleDuration: UInt32 = 0
    public var defaultSampleSize: UInt32 = 0
    public var defaultSampleFlags: UInt32 = 0
    public init(trackID: UInt32) { self.trackID = trackID }
    public var payloadSize: Int { 24 }
    public func encodePayload(into w: inout ByteWriter) {
        w.fullBoxHeader(version: 0, flags: 0)
        w.u32(trackID)
        w.u32(defaultSampleDescriptionIndex)
        w.u32(defaultSampleDuration); w.u32(defaultSampleSize); w.u32(defaultSampleFlags)
    }
    public init(payload r: inout ByteReader) throws(MP4ParseError) {
        _ = try r.fullBoxHeader()
        trackID = try r.u32("track_ID")
        defaultSampleDescriptionIndex = try r.u32("default_sample_description_index")
        defaultSampleDuration = try r.u32("default_sample_duration")
        defaultSampleSize = try r.u32("default_sample_size")
        defaultSampleFlags = try r.u32("default_sample_flags")
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
/// data offsets are relative to the enclosing `moof` and a fragment is self-contained. Other
/// muxers (ffmpeg) put per-fragment sample defaults here; they are read and kept, since a
/// `trun` that omits a field means this default (or, without one, the `trex` default).
public struct TrackFragmentHeaderBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "tfhd"
    public static let defaultBaseIsMoof: UInt32 = 0x02_0000
    public var trackID: UInt32
    public var flags: UInt32
    public var baseDataOffset: UInt64?
    public var sampleDescriptionIndex: UInt32?
    public var defaultSampleDuration: UInt32?
    public var defaultSampleSize: UInt32?
    public var defaultSampleFlags: UInt32?

    public init(trackID: UInt32) {
        self.trackID = trackID
        flags = Self.defaultBaseIsMoof
    }

    private var optionalFields: [UInt32?] { [sampleDescriptionIndex, defaultSampleDuration, defaultSampleSize, defaultSampleFlags] }
    public var payloadSize: Int { 8 + (baseDataOffset == nil ? 0 : 8) + optionalFields.compactMap { $0 }.count * 4 }
    public func encodePayload(into w: inout ByteWriter) {
        var flags = self.flags & ~UInt32(0x3B)
        if baseDataOffset != nil { flags |= 0x1 }
        for (bit, field) in zip([UInt32(0x2), 0x8, 0x10, 0x20], optionalFields) where field != nil { flags |= bit }
        w.fullBoxHeader(version: 0, flags: flags)
        w.u32(trackID)
        if let baseDataOffset { w.u64(baseDataOffset) }
        for field in optionalFields { if let field { w.u32(field) } }
    }

    public init(payload r: inout ByteReader) throws(MP4ParseError) {
        (_, flags) = try r.fullBoxHeader()
        trackID = try r.u32("track_ID")
        if flags & 0x1 != 0 { baseDataOffset = try r.u64("base_data_offset") }
        if flags & 0x2 != 0 { sampleDescriptionIndex = try r.u32("sample_description_index") }
        if flags & 0x8 != 0 { defaultSampleDuration = try r.u32("default_sample_duration") }
        if flags & 0x10 != 0 { defaultSampleSize = try r.u32("default_sample_size") }
        if flags & 0x20 != 0 { defaultSampleFlags = try r.u32("default_sample_flags") }
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
        try self.init(payload: &r, trackDefaults: [:])
    }

    /// Fields a `trun` omits take the `tfhd` default, else the track's `trex` default
    /// (`trackDefaults`, by track id; empty when the movie is not known).
    public init(payload r: inout ByteReader, trackDefaults: [UInt32: TrackExtendsBox]) throws(MP4ParseError) {
        let children = try r.childBoxes()
        header = try requireChild(TrackFragmentHeaderBox.self, in: children, parent: "traf")
        decodeTime = try requireChild(TrackFragmentDecodeTimeBox.self, in: children, parent: "traf")
        let runs = children.filter { $0.header.type == TrackRunBox.boxType }
        guard runs.count == 1, var payload = runs.first?.payload else { throw .unsupported("traf with \(runs.count) trun boxes") }
        let trex = trackDefaults[header.trackID]
        run = try TrackRunBox(payload: &payload,
                              defaultDuration: header.defaultSampleDuration ?? trex?.defaultSampleDuration ?? 0,
                              defaultSize: header.defaultSampleSize ?? trex?.defaultSampleSize ?? 0,
                              defaultFlags: header.defaultSampleFlags ?? trex?.defaultSampleFlags ?? 0)
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
        try self.init(payload: &r, trackDefaults: [:])
    }

    /// `trackDefaults`: the movie's `trex` boxes by track id (see ``TrackFragmentBox``).
    public init(payload r: inout ByteReader, trackDefaults: [UInt32: TrackExtendsBox]) throws(MP4ParseError) {
        let children = try r.childBoxes()
        header = try requireChild(MovieFragmentHeaderBox.self, in: children, parent: "moof")
        trackFragments = []
        for child in children where child.header.type == TrackFragmentBox.boxType {
            var payload = child.payload
            trackFragments.append(try TrackFragmentBox(payload: &payload, trackDefaults: trackDefaults))
        }
    }
}

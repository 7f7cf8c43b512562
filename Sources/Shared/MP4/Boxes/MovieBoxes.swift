/// `stbl` (§8.5.1): the sample tables. Empty tables in a fragmented file's init segment.
public struct SampleTableBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "stbl"
    public var description: SampleDescriptionBox
    public var timeToSample: TimeToSampleBox
    public var compositionOffsets: CompositionOffsetBox?
    public var syncSamples: SyncSampleBox?
    public var sampleToChunk: SampleToChunkBox
    public var sampleSizes: SampleSizeBox
    public var chunkOffsets: ChunkOffsetBox
    public var rollGroup: (description: RollGroupDescriptionBox, mapping: SampleToGroupBox)?

    public init(description: SampleDescriptionBox) {
        self.description = description
        timeToSample = TimeToSampleBox(entries: [])
        sampleToChunk = SampleToChunkBox(entries: [])
        sampleSizes = SampleSizeBox(sizes: [])
        chunkOffsets = ChunkOffsetBox(offsets: [])
    }

    var children: [any MP4Box] {
        var boxes: [any MP4Box] = [description, timeToSample]
        if let compositionOffsets { boxes.append(compositionOffsets) }
        if let syncSamples { boxes.append(syncSamples) }
        boxes += [sampleToChunk, sampleSizes, chunkOffsets] as [any MP4Box]
        if let rollGroup { boxes += [rollGroup.description, rollGroup.mapping] as [any MP4Box] }
        return boxes
    }

    public var payloadSize: Int { children.totalSize }
    public func encodePayload(into w: inout ByteWriter) { children.encodeAll(into: &w) }

    public init(payload r: inout ByteReader) throws(MP4ParseError) {
        let children = try r.childBoxes()
        description = try requireChild(SampleDescriptionBox.self, in: children, parent: "stbl")
        timeToSample = try requireChild(TimeToSampleBox.self, in: children, parent: "stbl")
        compositionOffsets = try decodeChild(CompositionOffsetBox.self, in: children)
        syncSamples = try decodeChild(SyncSampleBox.self, in: children)
        sampleToChunk = try requireChild(SampleToChunkBox.self, in: children, parent: "stbl")
        sampleSizes = try requireChild(SampleSizeBox.self, in: children, parent: "stbl")
        guard let offsets = children.first(where: { $0.header.type == "stco" || $0.header.type == "co64" }) else {
            throw .missingBox("stco", in: "stbl")
        }
        var payload = offsets.payload
        chunkOffsets = try ChunkOffsetBox(payload: &payload, is64Bit: offsets.header.type == "co64")
        if let sgpd = try? decodeChild(RollGroupDescriptionBox.self, in: children),
           let sbgp = try decodeChild(SampleToGroupBox.self, in: children) {
            rollGroup = (sgpd, sbgp)
        }
    }

    public static func == (a: Self, b: Self) -> Bool {
        a.description == b.description && a.timeToSample == b.timeToSample && a.compositionOffsets == b.compositionOffsets
            && a.syncSamples == b.syncSamples && a.sampleToChunk == b.sampleToChunk && a.sampleSizes == b.sampleSizes
            && a.chunkOffsets == b.chunkOffsets && a.rollGroup?.description == b.rollGroup?.description
            && a.rollGroup?.mapping == b.rollGroup?.mapping
    }
}

/// `minf` (§8.4.4).
public struct MediaInformationBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "minf"
    public var isAudio: Bool
    public var sampleTable: SampleTableBox

    public init(isAudio: Bool, sampleTable: SampleTableBox) {
        self.isAudio = isAudio
        self.sampleTable = sampleTable
    }

    var children: [any MP4Box] {
        [isAudio ? SoundMediaHeaderBox() as any MP4Box : VideoMediaHeaderBox(), DataInformationBox(), sampleTable]
    }
    public var payloadSize: Int { children.totalSize }
    public func encodePayload(into w: inout ByteWriter) { children.encodeAll(into: &w) }

    public init(payload r: inout ByteReader) throws(MP4ParseError) {
        let children = try r.childBoxes()
        isAudio = children.contains { $0.header.type == SoundMediaHeaderBox.boxType }
        sampleTable = try requireChild(SampleTableBox.self, in: children, parent: "minf")
    }
}

/// `mdia` (§8.4.1).
public struct MediaBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "mdia"
    public var header: MediaHeaderBox
    public var handler: HandlerBox
    public var information: MediaInformationBox

    public init(header: MediaHeaderBox, handler: HandlerBox, information: MediaInformationBox) {
        self.header = header
        self.handler = handler
        self.information = information
    }

    public var payloadSize: Int { header.size + handler.size + information.size }
    public func encodePayload(into w: inout ByteWriter) {
        header.encode(into: &w)
        handler.encode(into: &w)
        information.encode(into: &w)
    }
    public init(payload r: inout ByteReader) throws(MP4ParseError) {
        let children = try r.childBoxes()
        header = try requireChild(MediaHeaderBox.self, in: children, parent: "mdia")
        handler = try requireChild(HandlerBox.self, in: children, parent: "mdia")
        information = try requireChild(MediaInformationBox.self, in: children, parent: "mdia")
    }
}

/// `trak` (§8.3.1).
public struct TrackBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "trak"
    public var header: TrackHeaderBox
    public var edit: EditBox?
    public var media: MediaBox

    public init(header: TrackHeaderBox, edit: EditBox?, media: MediaBox) {
        self.header = header
        self.edit = edit
        self.media = media
    }

    public var payloadSize: Int { header.size + edit.sizeOrZero + media.size }
    public func encodePayload(into w: inout ByteWriter) {
        header.encode(into: &w)
        edit?.encode(into: &w)
        media.encode(into: &w)
    }
    public init(payload r: inout ByteReader) throws(MP4ParseError) {
        let children = try r.childBoxes()
        header = try requireChild(TrackHeaderBox.self, in: children, parent: "trak")
        edit = try decodeChild(EditBox.self, in: children)
        media = try requireChild(MediaBox.self, in: children, parent: "trak")
    }
}

/// `moov` (§8.2.1).
public struct MovieBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "moov"
    public var header: MovieHeaderBox
    public var tracks: [TrackBox]
    public var extends: MovieExtendsBox?
    public var userData: UserDataBox?

    public init(header: MovieHeaderBox, tracks: [TrackBox], extends: MovieExtendsBox?, userData: UserDataBox?) {
        self.header = header
        self.tracks = tracks
        self.extends = extends
        self.userData = userData
    }

    public var payloadSize: Int { header.size + tracks.reduce(0) { $0 + $1.size } + extends.sizeOrZero + userData.sizeOrZero }
    public func encodePayload(into w: inout ByteWriter) {
        header.encode(into: &w)
        tracks.forEach { $0.encode(into: &w) }
        extends?.encode(into: &w)
        userData?.encode(into: &w)
    }
    public init(payload r: inout ByteReader) throws(MP4ParseError) {
        let children = try r.childBoxes()
        header = try requireChild(MovieHeaderBox.self, in: children, parent: "moov")
        tracks = try decodeChildren(TrackBox.self, in: children)
        extends = try decodeChild(MovieExtendsBox.self, in: children)
        userData = try decodeChild(UserDataBox.self, in: children)
    }
}

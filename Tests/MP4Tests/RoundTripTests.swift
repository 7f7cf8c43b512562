@testable import MP4
import Testing

/// Encode → decode round trips for every `DecodableBox`, leaves and containers, with
/// `size == encoded().count` checked for each (see `expectRoundTrip`).
@Suite("Round trips")
struct RoundTripTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let box: any DecodableBox & Equatable
        var testDescription: String { name }
        init(_ name: String, _ box: any DecodableBox & Equatable) {
            self.name = name
            self.box = box
        }
    }

    static let leaves: [Case] = [
        Case("ftyp fragmented", FileTypeBox.fragmented),
        Case("ftyp progressive", FileTypeBox.progressive),
        Case("ftyp without compatible brands", FileTypeBox(majorBrand: "qt  ", minorVersion: 0, compatibleBrands: [])),
        Case("free 8", FreeSpaceBox(length: 8)),
        Case("free 0", FreeSpaceBox(length: 0)),
        Case("mvhd v0", MovieHeaderBox(creationTime: Fixtures.creation, timescale: 90000, duration: 12_345, nextTrackID: 3)),
        Case("mvhd v1 by creation time", MovieHeaderBox(creationTime: 0x1_0000_0000, timescale: 1000, duration: 1, nextTrackID: 2)),
        Case("tkhd video", Fixtures.videoTrak.header),
        Case("tkhd audio", Fixtures.audioTrak.header),
        Case("tkhd v1", TrackHeaderBox(trackID: 9, creationTime: 1, duration: 0x2_0000_0000, isAudio: false, width: 1920, height: 1080,
                                       matrix: .rotation(270, width: 1920, height: 1080))),
        Case("mdhd v0", MediaHeaderBox(creationTime: Fixtures.creation, timescale: 48000, duration: 96_000)),
        Case("mdhd v1", MediaHeaderBox(creationTime: 0, timescale: 90000, duration: 0x1_0000_0000)),
        Case("hdlr ascii", HandlerBox(handlerType: "soun", name: "mic")),
        Case("hdlr utf-8", HandlerBox(handlerType: "vide", name: "カメラ 🎥")),
        Case("hdlr empty name", HandlerBox(handlerType: "vide", name: "")),
        Case("vmhd", VideoMediaHeaderBox()),
        Case("smhd", SoundMediaHeaderBox()),
        Case("dinf", DataInformationBox()),
        Case("avcC high", Fixtures.avc1.configuration),
        Case("avcC baseline", AVCConfigurationBox(sps: X264.sps240p, pps: X264.pps240p, info: try! H264SequenceParameterSet(nalUnit: X264.sps240p))),
        Case("avcC 1080p", AVCConfigurationBox(sps: X264.sps1080p, pps: X264.pps720p, info: try! H264SequenceParameterSet(nalUnit: X264.sps1080p))),
        Case("avc1", Fixtures.avc1),
        Case("dOps stereo", Fixtures.opus.specific),
        Case("dOps 5.1", OpusSpecificBox(head: OpusHead(channelCount: 6, preSkip: 312, channelMappingFamily: 1,
                                                       channelMappingTable: [4, 2, 0, 4, 1, 2, 3, 5]))),
        Case("Opus", Fixtures.opus),
        Case("stsd avc1", SampleDescriptionBox(entries: [.avc(Fixtures.avc1)])),
        Case("stsd Opus", SampleDescriptionBox(entries: [.opus(Fixtures.opus)])),
        Case("stts", TimeToSampleBox(durations: [960, 960, 480, 960])),
        Case("stts empty", TimeToSampleBox(entries: [])),
        Case("ctts v0", CompositionOffsetBox(offsets: [3000, 0, 6000])),
        Case("ctts v1", CompositionOffsetBox(offsets: [0, -3000, Int32.min, Int32.max])),
        Case("stss", SyncSampleBox(sampleNumbers: [1, 61, 121])),
        Case("stsc", SampleToChunkBox(samplesPerChunk: [30, 30, 29, 31, 31])),
        Case("stsc explicit", SampleToChunkBox(entries: [.init(firstChunk: 1, samplesPerChunk: 5, sampleDescriptionIndex: 2)])),
        Case("stsz uniform", SampleSizeBox(sizes: [160, 160])),
        Case("stsz table", SampleSizeBox(sizes: [1, 2, 3, UInt32.max])),
        Case("stsz single", SampleSizeBox(sizes: [4_000])),
        Case("elst v0", Fixtures.audioTrak.edit!.editList),
        Case("elst v1", EditListBox(entries: [.init(segmentDuration: 1 << 40, mediaTime: -1), .init(segmentDuration: 1, mediaTime: 1 << 35)])),
        Case("edts", Fixtures.videoTrak.edit!),
        Case("sgpd", RollGroupDescriptionBox(rollDistance: -4)),
        Case("sgpd positive", RollGroupDescriptionBox(rollDistance: Int16.max)),
        Case("sbgp", SampleToGroupBox(entries: [.init(sampleCount: 4, groupDescriptionIndex: 0), .init(sampleCount: 96, groupDescriptionIndex: 1)])),
        Case("trex", TrackExtendsBox(trackID: UInt32.max)),
        Case("mvex", MovieExtendsBox(trackExtends: [TrackExtendsBox(trackID: 1), TrackExtendsBox(trackID: 2), TrackExtendsBox(trackID: 3)])),
        Case("mfhd", MovieFragmentHeaderBox(sequenceNumber: UInt32.max)),
        Case("tfhd", TrackFragmentHeaderBox(trackID: 2)),
        Case("tfdt", TrackFragmentDecodeTimeBox(baseMediaDecodeTime: UInt64.max)),
        Case("trun 0x701", TrackRunBox(dataOffset: 0, samples: [.init(duration: 960, size: 3, flags: 0x0200_0000, compositionOffset: 0)])),
        Case("trun 0xF01", Fixtures.fragment.trackFragments[0].run),
        Case("trun v1", TrackRunBox(dataOffset: Int32.max, samples: [.init(duration: 1, size: 2, flags: 3, compositionOffset: -1)])),
        Case("trun empty", TrackRunBox(dataOffset: 100, samples: [])),
        Case("mcrs", Fixtures.recordingInfo),
        Case("udta", UserDataBox(recordingInfo: Fixtures.recordingInfo)),
        Case("udta empty", UserDataBox(recordingInfo: nil)),
    ]

    static var containers: [Case] {
        var empty = SampleTableBox(description: SampleDescriptionBox(entries: [.avc(Fixtures.avc1)]))
        empty.syncSamples = nil
        return [
            Case("stbl video", Fixtures.videoSampleTable),
            Case("stbl audio with roll group", Fixtures.audioSampleTable),
            Case("stbl empty (init segment)", empty),
            Case("minf video", MediaInformationBox(isAudio: false, sampleTable: Fixtures.videoSampleTable)),
            Case("minf audio", MediaInformationBox(isAudio: true, sampleTable: Fixtures.audioSampleTable)),
            Case("mdia video", Fixtures.videoMedia),
            Case("mdia audio", Fixtures.audioMedia),
            Case("trak video", Fixtures.videoTrak),
            Case("trak audio", Fixtures.audioTrak),
            Case("trak without edts", TrackBox(header: Fixtures.videoTrak.header, edit: nil, media: Fixtures.videoMedia)),
            Case("moov final", Fixtures.finalMovie),
            Case("moov without udta", MovieBox(header: Fixtures.finalMovie.header, tracks: [Fixtures.audioTrak], extends: nil, userData: nil)),
            Case("moov init", try! Fixtures.initMovie()),
            Case("traf", Fixtures.fragment.trackFragments[1]),
            Case("moof", Fixtures.fragment),
            Case("moof empty", MovieFragmentBox(sequenceNumber: 1, trackFragments: [])),
        ]
    }

    @Test("leaf boxes", arguments: leaves)
    func leaf(_ c: Case) throws {
        try expectRoundTrip(c.box)
    }

    @Test("container boxes", arguments: containers)
    func container(_ c: Case) throws {
        try expectRoundTrip(c.box)
    }

    @Test("moov built by MovieBuilder from track tables round-trips and keeps its tables")
    func builtMovie() throws {
        let video = try Fixtures.videoTrack(rotation: 180)
        let audio = try Fixtures.audioTrack()
        var vt = TrackTable()
        vt.appendChunk(offset: 1_000, decodeTimes: (0..<30).map { Int64($0) * 3000 }, compositionOffsets: (0..<30).map { [3000, 6000, 0][$0 % 3] },
                       sizes: (0..<30).map { $0 == 0 ? 30_000 : 2_000 }, sync: (0..<30).map { $0 == 0 }, lastDuration: 3000)
        vt.appendChunk(offset: 5_000_000_000, decodeTimes: (30..<60).map { Int64($0) * 3000 }, compositionOffsets: (0..<30).map { [3000, 6000, 0][$0 % 3] },
                       sizes: (0..<30).map { $0 == 0 ? 30_000 : 2_000 }, sync: (0..<30).map { $0 == 0 }, lastDuration: 3000)
        var at = TrackTable()
        at.appendChunk(offset: 100_000, decodeTimes: (0..<100).map { Int64($0) * 960 }, compositionOffsets: Array(repeating: 0, count: 100),
                       sizes: Array(repeating: 120, count: 100), sync: Array(repeating: true, count: 100), lastDuration: 960)
        let info = RecordingInfoBox(sessionOriginNanos: 0, segmentOriginNanos: 33_333_333, decodeOriginNanos: 0, segmentIndex: 0)
        let moov = MovieBuilder.finalMovie(tracks: [video, audio], tables: [vt, at], creationTime: 1_700_000_000, info: info)
        let bytes = try expectRoundTrip(moov)
        let decoded = try decodeBox(MovieBox.self, from: bytes)
        let stbl = decoded.tracks[0].media.information.sampleTable
        #expect(stbl.chunkOffsets.type == "co64")
        #expect(stbl.chunkOffsets.offsets == [1_000, 5_000_000_000])
        #expect(stbl.syncSamples?.sampleNumbers == [1, 31])
        #expect(stbl.timeToSample.entries == [.init(count: 60, delta: 3000)])
        #expect(stbl.sampleSizes.sizes == vt.sizes)
        #expect(decoded.tracks[0].header.matrix == .rotation(180, width: 1280, height: 720))
        #expect(decoded.tracks[1].media.information.sampleTable.rollGroup?.description.rollDistance == -4)
        #expect(decoded.extends == nil)
        #expect(decoded.header.nextTrackID == 4)
    }
}

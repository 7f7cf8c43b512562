import TestSupport
import Foundation
@testable import MP4
import Testing

/// The codec seam (docs/architecture.md, "Codecs"): every codec-specific rule comes from the
/// track's `TrackCodec`, and a codec without one is refused before anything is written.
@Suite("Track codecs")
struct TrackCodecTests {
    @Test("H.264 brings avc1, 90 kHz, marked sync samples with stss, no priming and no roll group")
    func h264Rules() throws {
        let track = try Fixtures.videoTrack()
        let codec = try #require(track.codec as? H264Codec)
        #expect(H264Codec.name == .h264 && track.kind == .video && track.isVideo)
        #expect(track.kind.handlerType == "vide")
        #expect(track.syncSamples == .marked)
        #expect(codec.primingTicks == 0)
        #expect(codec.sampleEntry == .avc(Fixtures.avc1))
        #expect(codec.rollGroup(for: Self.table(samples: 100, ticks: 3000)) == nil)
        #expect(TrackCodecs.writing(codec.sampleEntry) == H264Codec.self)
    }

    @Test("Opus brings its entry, 48 kHz, every sample sync, the pre-skip and a roll group of -4 packets")
    func opusRules() throws {
        let track = try Fixtures.audioTrack()
        let codec = try #require(track.codec as? OpusCodec)
        #expect(OpusCodec.name == .opus && track.kind == .audio && !track.isVideo)
        #expect(track.kind.handlerType == "soun")
        #expect(track.syncSamples == .everySample)
        #expect(codec.primingTicks == 312)
        #expect(codec.sampleEntry == .opus(Fixtures.opus))
        #expect(codec.rollGroup(for: Self.table(samples: 100, ticks: 960))?.description.rollDistance == -4)
        #expect(TrackCodecs.writing(codec.sampleEntry) == OpusCodec.self)
        // Every packet is a sync sample, whatever the caller flagged.
        let sample = MuxerSample(trackID: 3, sequence: 1, pts: 0, isKeyframe: false, data: [0xFC, 0x01])
        let prepared = try codec.prepare(sample, track: 3)
        #expect(prepared.payload == [0xFC, 0x01] && prepared.isSync)
    }

    @Test("a sample entry no codec here writes (mp4a) is recognised by none, and the reader refuses its track")
    func foreignEntry() throws {
        #expect(TrackCodecs.writing(.other("mp4a")) == nil)
        let video = try Fixtures.videoTrack()
        var trak = MovieBuilder.initMovie(tracks: [video], creationTime: 0, info: RecordingInfoBox(sessionOriginNanos: 0, segmentOriginNanos: 0, decodeOriginNanos: 0, segmentIndex: 0)).tracks[0]
        trak.media.information.sampleTable.description = SampleDescriptionBox(entries: [.other("mp4a")])
        expectMuxerError(.notOurFile) { try PreparedTrack(trak: trak, creationTime: 0) }
    }

    @Test("a third codec is refused by the muxer's configuration, naming codec and track, and no file is written")
    func thirdCodecRefusedByTheMuxer() throws {
        let directory = NSTemporaryDirectory() + "third-codec-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }  // cleanup only; the assertions are above it
        let tracks = [TrackConfiguration(id: 1, label: "front", codec: .h264(sps: X264.sps720p, pps: X264.pps720p)),
                      TrackConfiguration(id: 2, label: "mic", codec: .unsupported("aac"))]
        let configuration = MuxerConfiguration(tracks: tracks, directory: directory, baseName: "r", creationTime: 1_700_000_000)
        do {
            _ = try MP4Muxer(configuration: configuration)
            Issue.record("a recording with an AAC track was accepted")
        } catch {
            #expect(error.code == .unsupportedCodec)
            #expect(error.message == "track 2: codec aac is not supported by the muxer")
        }
        do {
            _ = try MP4Muxer.resume(configuration: configuration)
            Issue.record("resuming a recording with an AAC track was accepted")
        } catch {
            #expect(error.code == .unsupportedCodec)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }

    static func table(samples: Int, ticks: UInt32) -> TrackTable {
        var table = TrackTable()
        table.appendChunk(offset: 100, decodeTimes: (0..<samples).map { Int64($0) * Int64(ticks) }, compositionOffsets: Array(repeating: 0, count: samples),
                          sizes: Array(repeating: 10, count: samples), sync: Array(repeating: true, count: samples), lastDuration: ticks)
        return table
    }
}

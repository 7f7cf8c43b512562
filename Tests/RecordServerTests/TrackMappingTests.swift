import NIOCore
@testable import RecordServerCore
import Shared
import Testing
@testable import WireProtocol

/// record-server's end of the codec seam: wire tracks become muxer tracks of the same codec,
/// and a codec it cannot record is refused at SessionOpen by name, never recorded as another.
@Suite("Track mapping")
struct TrackMappingTests {
    static let opusHead = OpusHead(channelCount: 1, preSkip: 312).bytes
    static let mic = TrackDescriptor(id: 2, label: "mic", format: .opus(OpusFormat(sampleRate: 48000, channels: 1, opusHead: opusHead)))

    @Test("each wire codec maps onto the muxer codec of the same name, on MP4 track id + 1")
    func wireCodecsMapOntoTheirMuxerCodec() throws {
        let audio = try TrackMapping.configuration(Self.mic)
        #expect(audio.id == 3 && audio.codec == .opus(OpusHead(channelCount: 1, preSkip: 312)))
        let sps: [UInt8] = [0x67, 0x42, 0xC0, 0x1E], pps: [UInt8] = [0x68, 0xCE]
        let front = TrackDescriptor(id: 0, label: "front", format: .h264(H264Format(
            width: 320, height: 240, rotation: .quarter, sequenceParameterSets: [sps], pictureParameterSets: [pps])))
        let video = try TrackMapping.configuration(front)
        #expect(video.id == 1 && video.codec == .h264(sps: sps, pps: pps) && video.rotation == 90)
        #expect(TrackMapping.kind(front) == ("video", "h264", 320, 240))
        #expect(TrackMapping.kind(Self.mic) == ("audio", "opus", 0, 0))
    }

    @Test("a codec the muxer has no rules for refuses the SessionOpen with invalidCodecConfig, naming codec and wire track")
    func thirdCodecRefusedAtSessionOpen() {
        let aac = TrackConfiguration(id: TrackMapping.muxerTrackID(2), label: "mic", codec: .unsupported("aac"))
        let configuration = MuxerConfiguration(tracks: [aac], directory: "/nonexistent", baseName: "r", creationTime: 0)
        do {
            _ = try MP4Muxer(configuration: configuration)
            Issue.record("the muxer accepted an AAC track")
        } catch {
            let refusal = TrackMapping.refusal(of: error)
            #expect(refusal?.code == .invalidCodecConfig)
            #expect(refusal?.message == "unsupportedCodec: track 2: codec aac is not supported by the muxer")
        }
        // A failure of the server's own (a full disk) is not the track's fault.
        #expect(TrackMapping.refusal(of: MuxerError(.io, "no space left on device")) == nil)
    }

    @Test("a codec id the protocol does not define (3) is refused when the descriptor is read, before any mapping")
    func thirdWireCodecRefusedByTheDecoder() throws {
        var buffer = ByteBuffer()
        try buffer.writeTrackDescriptor(Self.mic, limits: .default)
        buffer.setInteger(UInt8(3), at: buffer.readerIndex + 2)  // byte 2: codec (protocol.md §6.6.1)
        do {
            _ = try buffer.readTrackDescriptor(limits: .default)
            Issue.record("a track with codec 3 was read")
        } catch {
            #expect(error.code == .invalidField)
            #expect(error.message == "invalid field Track.codec: 3 is not 1 (H.264) or 2 (Opus)")
        }
    }
}

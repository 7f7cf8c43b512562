import Foundation
import NIOCore
import RecordCtlCore
import Shared

/// Real x264 + Opus content for a session, as protocol messages: the track descriptors and
/// the samples in send order (H.264 in length-prefixed form, as protocol.md §6.12 requires).
struct SessionContent {
    var open: SessionOpen
    var samples: [Sample]
    /// Samples per protocol track id.
    var counts: [UInt8: Int]

    static func make(sessionID: SessionID, seconds: Double = 3, videos: [String] = ["front", "back"], audio: String? = "mic",
                     width: Int = 320, height: Int = 240, fps: Int = 30) throws -> SessionContent {
        let recording = try SyntheticRecording.generate(
            seconds: seconds, videos: videos.map { .init(label: $0, width: width, height: height, fps: fps) },
            audio: audio.map { .init(label: $0) })
        var descriptors: [TrackDescriptor] = []
        for (i, track) in recording.tracks.enumerated() {
            switch track.codec {
            case .h264(let sps, let pps):
                descriptors.append(TrackDescriptor(id: UInt8(i), label: track.label, format: .h264(H264Format(
                    width: UInt16(width), height: UInt16(height), sequenceParameterSets: [sps], pictureParameterSets: [pps]))))
            case .opus(let head):
                descriptors.append(TrackDescriptor(id: UInt8(i), label: track.label, format: .opus(OpusFormat(
                    sampleRate: head.inputSampleRate, channels: head.channelCount, opusHead: head.bytes))))
            case .unsupported(let name):
                throw UnsupportedCodecError(codec: name, place: "the wire protocol")
            }
        }
        var counts: [UInt8: Int] = [:]
        let samples = try recording.samples.map { s throws -> Sample in
            let track = UInt8(s.trackID - 1)
            counts[track, default: 0] += 1
            let data = H264NALUnits.isAnnexB(s.data) ? try H264NALUnits.lengthPrefixed(s.data) : s.data
            return Sample(track: track, flags: s.isKeyframe ? [.keyframe] : [], sequence: s.sequence, pts: s.pts, dts: s.dts,
                          duration: s.duration, data: ByteBuffer(bytes: data))
        }
        return SessionContent(open: SessionOpen(sessionID: sessionID, labels: [Label("room", "test")], tracks: descriptors),
                              samples: samples, counts: counts)
    }
}

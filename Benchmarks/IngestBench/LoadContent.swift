import BenchSupport
import NIOCore
import Shared

/// The benchmark content as protocol messages: track descriptors and one loop of samples
/// (H.264 with 4-byte length prefixes, as protocol.md §6.12 requires). Agents replay the
/// loop again and again, shifting timestamps by the loop length each time, so a step can
/// run longer than the encoded content.
struct LoadContent: Sendable {
    var tracks: [TrackDescriptor]
    /// One loop, in send (decode-time) order; sequence numbers are assigned when sent.
    var samples: [Sample]
    /// Media time of one loop, nanoseconds.
    var loopNanos: Int64
    /// First decode time of the loop (the agent's clock origin).
    var firstDTS: Int64
    var payloadBytesPerLoop: Int

    init(_ content: BenchContent) throws {
        var descriptors: [TrackDescriptor] = []
        for (i, track) in content.recording.tracks.enumerated() {
            switch track.codec {
            case .h264(let sps, let pps):
                descriptors.append(TrackDescriptor(id: UInt8(i), label: track.label, format: .h264(H264Format(
                    width: UInt16(content.width), height: UInt16(content.height),
                    sequenceParameterSets: [sps], pictureParameterSets: [pps]))))
            case .opus(let head):
                descriptors.append(TrackDescriptor(id: UInt8(i), label: track.label, format: .opus(OpusFormat(
                    sampleRate: head.inputSampleRate, channels: head.channelCount, opusHead: head.bytes))))
            case .unsupported(let name):
                throw UnsupportedCodecError(codec: name, place: "the wire protocol")
            }
        }
        tracks = descriptors
        loopNanos = Int64(content.seconds) * 1_000_000_000
        firstDTS = content.recording.samples.map(\.dts).min() ?? 0
        // Only samples inside one loop length, so that the next loop's shifted timestamps
        // continue every track monotonically.
        let end = firstDTS + loopNanos
        samples = try content.recording.samples.filter { $0.dts < end }.map { s in
            let data = H264NALUnits.isAnnexB(s.data) ? try H264NALUnits.lengthPrefixed(s.data) : s.data
            return Sample(track: UInt8(s.trackID - 1), flags: s.isKeyframe ? [.keyframe] : [], sequence: 1,
                          pts: s.pts, dts: s.dts, duration: s.duration, data: ByteBuffer(bytes: data))
        }
        payloadBytesPerLoop = samples.reduce(0) { $0 + $1.data.readableBytes }
    }

    /// Sample number `index` (0-based, over all loops) with its sequence number and shifted times.
    func sample(_ index: Int) -> Sample {
        let loop = Int64(index / samples.count)
        var s = samples[index % samples.count]
        s.sequence = UInt64(index + 1)
        s.pts += loop * loopNanos
        s.dts += loop * loopNanos
        return s
    }

    /// When sample `index` is due, relative to the session's start (nanoseconds).
    func dueOffset(_ index: Int) -> Int64 {
        let loop = Int64(index / samples.count)
        return samples[index % samples.count].dts - firstDTS + loop * loopNanos
    }

    /// Samples in `seconds` of media (whole loops plus a prefix of the next).
    func sampleCount(seconds: Int) -> Int { sampleCount(nanos: Int64(seconds) * 1_000_000_000) }

    /// Samples due in the first `limit` nanoseconds of media.
    func sampleCount(nanos limit: Int64) -> Int {
        let loops = Int(limit / loopNanos)
        let rest = limit - Int64(loops) * loopNanos
        let partial = samples.firstIndex { $0.dts - firstDTS >= rest } ?? samples.count
        return loops * samples.count + partial
    }

    /// Payload bytes of the first `count` samples.
    func payloadBytes(count: Int) -> Int {
        let loops = count / samples.count
        let partial = samples[..<(count % samples.count)].reduce(0) { $0 + $1.data.readableBytes }
        return loops * payloadBytesPerLoop + partial
    }
}

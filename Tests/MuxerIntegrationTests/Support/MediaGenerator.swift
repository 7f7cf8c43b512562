import TestSupport
import Foundation
import MediaEncoding
import Shared

/// One input sample as the test sent it, with everything an oracle needs to recognise it in
/// the output: its source-clock times, and the size and Adler-32 of its payload in MP4 form
/// (4-byte length prefixes, SPS/PPS/AUD removed — what a conforming muxer must store).
struct InputSample: Sendable {
    var trackID: UInt32
    /// Index of the sample within its track (decode order).
    var index: Int
    var pts: Int64
    var dts: Int64
    var duration: Int64
    var isKeyframe: Bool
    var data: [UInt8]
    var mp4Size: Int
    var mp4Adler: UInt32
    /// When a capture agent would have this sample ready to send (source-clock ns).
    var arrival: Int64
    var sequence: UInt64 = 0

    func muxerSample(sequence: UInt64? = nil) -> MuxerSample {
        MuxerSample(trackID: trackID, sequence: sequence ?? self.sequence, pts: pts, dts: dts, duration: duration,
                    isKeyframe: isKeyframe, data: data)
    }
}

/// What one track of a recording should look like after muxing.
struct ExpectedTrack: Sendable {
    var id: UInt32
    var label: String
    var isVideo: Bool
    var width: Int
    var height: Int
    var rotation: Int
    /// Opus pre-skip (0 for video).
    var preSkip: Int
    /// Every sample of the track, in decode order.
    var samples: [InputSample]

    var timescale: Int64 { isVideo ? 90000 : 48000 }
    var codecName: String { isVideo ? "h264" : "opus" }

    /// The same track holding only `samples[range]`.
    func slice(_ range: Range<Int>) -> ExpectedTrack {
        var copy = self
        copy.samples = Array(samples[range])
        return copy
    }
}

struct VideoSpec: Sendable {
    var id: UInt32
    var label: String
    var width = 320
    var height = 240
    var fps = 30
    var frames: Int
    /// Capture start relative to the recording's clock base (a late camera).
    var startOffset: Int64 = 0
    var bFrames = 0
    /// Frames between IDRs; nil = one per second.
    var keyframeInterval: Int?
    var rotation = 0
}

struct AudioSpec: Sendable {
    var id: UInt32
    var label: String
    /// 20 ms Opus packets.
    var packets: Int
    var startOffset: Int64 = 0
    /// Packets `gap.at ..< gap.at + gap.count` are lost: the microphone delivered nothing for
    /// that long, and the next packet's timestamp jumps over the hole.
    var gap: (at: Int, count: Int)?
    /// Packets `late.at ..< late.at + late.count` keep their timestamps but are delivered
    /// only together with packet `late.at + late.count` (a stalled driver flushing its buffer).
    var late: (at: Int, count: Int)?
}

enum SourceSpec: Sendable {
    case video(VideoSpec)
    case audio(AudioSpec)
}

/// A synthetic recording: real x264 and Opus encodes of the test pattern and tone, ready to
/// append. `samples` is interleaved by arrival time the way a capture agent sends them —
/// each camera's access units as x264 releases them, audio packets once their 20 ms are
/// captured — with sequence numbers 1, 2, 3… in that order.
struct GeneratedRecording: Sendable {
    var tracks: [TrackConfiguration]
    var expected: [ExpectedTrack]
    var samples: [InputSample]
    /// The source-clock instant the sources were started against.
    var clockBase: Int64

    func expected(id: UInt32) -> ExpectedTrack { expected.first { $0.id == id }! }
    func sample(sequence: UInt64) -> InputSample? { samples.first { $0.sequence == sequence } }
}

enum MediaGenerator {
    /// 7 s of two cameras (30 fps, front and back) and a microphone (20 ms packets).
    static func twoCamerasAndAMic() throws -> GeneratedRecording {
        try MediaGenerator.generate([
            .video(.init(id: 1, label: "front", frames: 210)),
            .video(.init(id: 2, label: "back", frames: 210)),
            .audio(.init(id: 3, label: "mic", packets: 350)),
        ])
    }

    /// A monotonic-clock-looking base (~16.7 minutes after boot), so nothing starts at 0.
    static let defaultClockBase: Int64 = 1_000_000_000_000
    static let opusPacketNanos: Int64 = 20_000_000

    static func generate(_ sources: [SourceSpec], clockBase: Int64 = defaultClockBase) throws -> GeneratedRecording {
        var tracks: [TrackConfiguration] = []
        var expected: [ExpectedTrack] = []
        var all: [(order: Int, sample: InputSample)] = []
        for (order, source) in sources.enumerated() {
            let track: ExpectedTrack
            let config: TrackConfiguration
            switch source {
            case let .video(spec): (config, track) = try encodeVideo(spec, clockBase: clockBase)
            case let .audio(spec): (config, track) = try encodeAudio(spec, clockBase: clockBase)
            }
            tracks.append(config)
            expected.append(track)
            all += track.samples.map { (order, $0) }
        }
        // Arrival order; ties broken by track order then decode order (stable sort keeps it).
        all.sort { a, b in
            if a.sample.arrival != b.sample.arrival { return a.sample.arrival < b.sample.arrival }
            if a.order != b.order { return a.order < b.order }
            return a.sample.index < b.sample.index
        }
        var samples: [InputSample] = []
        for (i, entry) in all.enumerated() {
            var s = entry.sample
            s.sequence = UInt64(i + 1)
            samples.append(s)
        }
        for t in expected.indices {
            let bySeq = Dictionary(uniqueKeysWithValues: samples.filter { $0.trackID == expected[t].id }.map { ($0.index, $0.sequence) })
            for i in expected[t].samples.indices { expected[t].samples[i].sequence = bySeq[i]! }
        }
        return GeneratedRecording(tracks: tracks, expected: expected, samples: samples, clockBase: clockBase)
    }

    static func videoEncoder(_ spec: VideoSpec) throws -> H264Encoder {
        try H264Encoder(settings: .init(
            width: spec.width, height: spec.height, fps: spec.fps, preset: "ultrafast",
            tune: spec.bFrames > 0 ? nil : "zerolatency", rateControl: .crf(26),
            keyframeInterval: spec.keyframeInterval ?? spec.fps, bFrames: spec.bFrames, threads: 1))
    }

    static func framePTS(_ i: Int, fps: Int) -> Int64 { Int64(i) * 1_000_000_000 / Int64(fps) }

    static func encodeVideo(_ spec: VideoSpec, clockBase: Int64) throws -> (TrackConfiguration, ExpectedTrack) {
        let encoder = try videoEncoder(spec)
        let pattern = TestPatternVideo(width: spec.width, height: spec.height, fps: spec.fps, label: spec.label)
        let start = clockBase + spec.startOffset
        let frameNanos = 1_000_000_000 / Int64(spec.fps)
        var out: [InputSample] = []
        func take(_ frames: [EncodedVideoFrame], arrival: Int64) {
            for f in frames {
                out.append(InputSample(trackID: spec.id, index: out.count, pts: f.pts, dts: f.dts, duration: frameNanos,
                                       isKeyframe: f.isKeyframe, data: f.data, mp4Size: 0, mp4Adler: 0,
                                       arrival: arrival))
            }
        }
        for i in 0..<spec.frames {
            let pts = start + framePTS(i, fps: spec.fps)
            // Ready 1 ms after capture of the picture that made x264 release it.
            take(try encoder.encode(pattern.frame(index: i), pts: pts), arrival: pts + 1_000_000)
        }
        take(try encoder.flush(), arrival: start + framePTS(spec.frames - 1, fps: spec.fps) + 2_000_000)
        for i in out.indices {
            let mp4 = mp4Form(annexB: out[i].data)
            out[i].mp4Size = mp4.count
            out[i].mp4Adler = adler32(mp4)
        }
        let config = TrackConfiguration(id: spec.id, label: spec.label, codec: .h264(sps: encoder.sps, pps: encoder.pps),
                                        rotation: spec.rotation)
        return (config, ExpectedTrack(id: spec.id, label: spec.label, isVideo: true, width: spec.width, height: spec.height,
                                      rotation: spec.rotation, preSkip: 0, samples: out))
    }

    static func encodeAudio(_ spec: AudioSpec, clockBase: Int64) throws -> (TrackConfiguration, ExpectedTrack) {
        let encoder = try OpusEncoder(channels: 1)
        let tone = TestToneAudio()
        let start = clockBase + spec.startOffset
        var out: [InputSample] = []
        var heldBack: [InputSample] = []
        for k in 0..<spec.packets {
            let packet = try encoder.encode(tone.samples(from: Int64(k * encoder.frameSize), count: encoder.frameSize))
            if let gap = spec.gap, (gap.at..<gap.at + gap.count).contains(k) { continue }
            let pts = start + Int64(k) * opusPacketNanos
            var s = InputSample(trackID: spec.id, index: 0, pts: pts, dts: pts, duration: opusPacketNanos, isKeyframe: true,
                                data: packet, mp4Size: packet.count, mp4Adler: adler32(packet), arrival: pts + opusPacketNanos)
            if let late = spec.late, (late.at..<late.at + late.count).contains(k) {
                heldBack.append(s)
                continue
            }
            for var h in heldBack {
                h.arrival = s.arrival
                h.index = out.count
                out.append(h)
            }
            heldBack.removeAll()
            s.index = out.count
            out.append(s)
        }
        let head = try OpusHead(bytes: encoder.opusHead)
        let config = TrackConfiguration(id: spec.id, label: spec.label, codec: .opus(head))
        return (config, ExpectedTrack(id: spec.id, label: spec.label, isVideo: false, width: 0, height: 0, rotation: 0,
                                      preSkip: encoder.preSkip, samples: out))
    }

    /// Annex B access unit → what an MP4 sample must hold: every NAL unit except SPS (7),
    /// PPS (8) and AUD (9), each behind a 4-byte big-endian length. Written independently of
    /// the muxer's own parser on purpose.
    static func mp4Form(annexB data: [UInt8]) -> [UInt8] {
        var starts: [(codeStart: Int, nalStart: Int)] = []
        var i = 0
        while i + 2 < data.count {
            if data[i] == 0, data[i + 1] == 0, data[i + 2] == 1 {
                starts.append((i, i + 3))
                i += 3
            } else {
                i += 1
            }
        }
        var out: [UInt8] = []
        for (n, s) in starts.enumerated() {
            var end = n + 1 < starts.count ? starts[n + 1].codeStart : data.count
            while end > s.nalStart, data[end - 1] == 0 { end -= 1 } // trailing_zero_8bits / 4-byte start codes
            guard end > s.nalStart else { continue }
            let type = data[s.nalStart] & 0x1F
            if type == 7 || type == 8 || type == 9 { continue }
            let len = UInt32(end - s.nalStart)
            out += [UInt8(len >> 24), UInt8((len >> 16) & 0xFF), UInt8((len >> 8) & 0xFF), UInt8(len & 0xFF)]
            out += data[s.nalStart..<end]
        }
        return out
    }
}

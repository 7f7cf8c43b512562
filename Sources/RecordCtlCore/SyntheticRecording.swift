public import MediaEncoding
public import Shared

/// Encodes the deterministic test sources (moving pattern with a frame-number bar code and a
/// flash each second; a tone with a beep at each flash) with real x264 and Opus, into the
/// samples an agent would send: timestamps on one clock, sequence numbers in send order.
public struct SyntheticRecording: Sendable {
    public struct Video: Sendable {
        public var label: String
        public var width: Int
        public var height: Int
        public var fps: Int
        /// Delay of this source's first frame after the recording's start, nanoseconds.
        public var startOffset: Int64
        public var bFrames: Int
        public var rotation: Int
        public init(label: String, width: Int, height: Int, fps: Int, startOffset: Int64 = 0, bFrames: Int = 0, rotation: Int = 0) {
            self.label = label
            self.width = width
            self.height = height
            self.fps = fps
            self.startOffset = startOffset
            self.bFrames = bFrames
            self.rotation = rotation
        }
    }

    public struct Audio: Sendable {
        public var label: String
        public var channels: Int
        public var startOffset: Int64
        public init(label: String, channels: Int = 1, startOffset: Int64 = 0) {
            self.label = label
            self.channels = channels
            self.startOffset = startOffset
        }
    }

    public var tracks: [TrackConfiguration]
    public var samples: [MuxerSample]

    /// - Parameters:
    ///   - clockBase: the source clock's value at the recording's start (any monotonic reading).
    ///   - preset: x264 preset; "ultrafast" keeps demos and tests quick.
    public static func generate(seconds: Double, videos: [Video], audio: Audio?, clockBase: Int64 = 1_000_000_000_000,
                                preset: String = "ultrafast", keyframeInterval: Int? = nil,
                                rateControl: H264Encoder.Settings.RateControl = .crf(23)) throws -> SyntheticRecording {
        var tracks: [TrackConfiguration] = []
        var samples: [(track: UInt32, sample: MuxerSample)] = []
        for (i, video) in videos.enumerated() {
            let id = UInt32(i + 1)
            let frameCount = Int((seconds * Double(video.fps)).rounded())
            let settings = H264Encoder.Settings(width: video.width, height: video.height, fps: video.fps, preset: preset,
                                                tune: video.bFrames > 0 ? nil : "zerolatency", rateControl: rateControl,
                                                keyframeInterval: keyframeInterval ?? video.fps, bFrames: video.bFrames)
            let encoder = try H264Encoder(settings: settings)
            tracks.append(TrackConfiguration(id: id, label: video.label, codec: .h264(sps: encoder.sps, pps: encoder.pps), rotation: video.rotation))
            let pattern = TestPatternVideo(width: video.width, height: video.height, fps: video.fps, label: video.label)
            var encoded: [EncodedVideoFrame] = []
            for n in 0..<frameCount {
                let pts = clockBase + video.startOffset + Int64(n) * 1_000_000_000 / Int64(video.fps)
                encoded += try encoder.encode(pattern.frame(index: n), pts: pts)
            }
            encoded += try encoder.flush()
            let frameDuration = 1_000_000_000 / Int64(video.fps)
            for f in encoded {
                samples.append((id, MuxerSample(trackID: id, sequence: 0, pts: f.pts, dts: f.dts, duration: frameDuration,
                                                isKeyframe: f.isKeyframe, data: f.data)))
            }
        }
        if let audio {
            let id = UInt32(videos.count + 1)
            let encoder = try OpusEncoder(channels: audio.channels)
            let head = try OpusHead(bytes: encoder.opusHead)
            tracks.append(TrackConfiguration(id: id, label: audio.label, codec: .opus(head)))
            let tone = TestToneAudio(sampleRate: 48000, channels: audio.channels)
            let packets = Int((seconds * 50).rounded())
            for k in 0..<packets {
                let pcm = tone.samples(from: Int64(k * encoder.frameSize), count: encoder.frameSize)
                let pts = clockBase + audio.startOffset + Int64(k) * 20_000_000
                samples.append((id, MuxerSample(trackID: id, sequence: 0, pts: pts, duration: 20_000_000, isKeyframe: true,
                                                data: try encoder.encode(pcm))))
            }
        }
        // Send order: by decode time across sources, as a live agent would emit them.
        samples.sort { ($0.sample.dts, $0.track) < ($1.sample.dts, $1.track) }
        var ordered: [MuxerSample] = []
        ordered.reserveCapacity(samples.count)
        for (n, entry) in samples.enumerated() {
            var s = entry.sample
            s.sequence = UInt64(n + 1)
            ordered.append(s)
        }
        return SyntheticRecording(tracks: tracks, samples: ordered)
    }
}

import Foundation
import MediaEncoding
import Testing
import TestSupport

/// Presentation time of frame `index` at `fps`, in nanoseconds (as `encodePattern` uses).
private func ptsFor(_ index: Int, fps: Int = 30) -> Int64 { Int64(index) * 1_000_000_000 / Int64(fps) }
/// Inverse of `ptsFor`.
private func indexFor(_ pts: Int64, fps: Int = 30) -> Int { Int((pts * Int64(fps) + 500_000_000) / 1_000_000_000) }

/// Encodes `count` test-pattern frames at 30 fps (pts = i/30 s in ns) and drains the encoder.
private func encodePattern(_ settings: H264Encoder.Settings, count: Int, ptsOffset: Int64 = 0) throws -> (H264Encoder, [EncodedVideoFrame]) {
    let encoder = try H264Encoder(settings: settings)
    let pattern = TestPatternVideo(width: settings.width, height: settings.height, fps: settings.fps, label: "TEST")
    var out: [EncodedVideoFrame] = []
    for i in 0..<count {
        let pts = ptsOffset + ptsFor(i, fps: settings.fps)
        out += try encoder.encode(pattern.frame(index: i), pts: pts)
    }
    out += try encoder.flush()
    return (encoder, out)
}

/// NAL unit types of an Annex B byte stream.
private func annexBNALTypes(_ data: [UInt8]) -> [UInt8] {
    var types: [UInt8] = []
    var i = 0
    while i + 3 < data.count {
        if data[i] == 0, data[i + 1] == 0, data[i + 2] == 1 {
            types.append(data[i + 3] & 0x1F)
            i += 3
        } else {
            i += 1
        }
    }
    return types
}

/// NAL units of a 4-byte length-prefixed access unit, or nil if the lengths do not tile it.
private func lengthPrefixedNALs(_ data: [UInt8]) -> [[UInt8]]? {
    var units: [[UInt8]] = []
    var i = 0
    while i < data.count {
        guard i + 4 <= data.count else { return nil }
        let n = data[i..<(i + 4)].reduce(0) { $0 << 8 | Int($1) }
        i += 4
        guard n > 0, i + n <= data.count else { return nil }
        units.append(Array(data[i..<(i + n)]))
        i += n
    }
    return units
}

/// Decodes an H.264 elementary stream with ffmpeg and returns each picture's luma plane.
private func decodeLuma(_ url: URL, width: Int, height: Int) throws -> [[UInt8]] {
    let decoded = try runTool("ffmpeg", [
        "-v", "error", "-i", url.path, "-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "gray", "-",
    ])
    #expect(decoded.status == 0, "ffmpeg decode failed: \(decoded.stderr)")
    let bytes = [UInt8](decoded.stdout)
    let size = width * height
    #expect(bytes.count % size == 0)
    return stride(from: 0, to: bytes.count - size + 1, by: size).map { Array(bytes[$0..<($0 + size)]) }
}

private func checkDecodedPattern(_ frames: [[UInt8]], count: Int, width: Int, height: Int, fps: Int) {
    #expect(frames.count == count)
    let numbers = frames.map { TestPatternReader.frameNumber(y: $0, width: width, height: height) }
    #expect(numbers == (0..<count).map { Optional($0) })
    let flashes = frames.enumerated().filter { TestPatternReader.isFlash(y: $0.element, width: width, height: height) }.map(\.offset)
    #expect(flashes == Array(stride(from: 0, to: count, by: fps)))
}

@Suite("H264Encoder")
struct H264EncoderTests {
    @Test("Annex B stream passes ffmpeg, frame numbers and flashes survive decoding", .enabled(if: ffmpegAvailable), arguments: [23.0, 30.0])
    func annexBStreamRoundTrip(crf: Double) throws {
        let (w, h, n) = (320, 240, 60)
        let settings = H264Encoder.Settings(width: w, height: h, fps: 30, rateControl: .crf(crf))
        let (encoder, frames) = try encodePattern(settings, count: n)

        #expect(encoder.sps.first.map { $0 & 0x1F } == 7)
        #expect(encoder.pps.first.map { $0 & 0x1F } == 8)
        #expect(frames.count == n)
        #expect(frames.map(\.pts) == (0..<n).map { ptsFor($0) })
        #expect(frames.allSatisfy { $0.dts <= $0.pts })
        #expect(zip(frames, frames.dropFirst()).allSatisfy { $0.dts < $1.dts })
        #expect(frames[0].isKeyframe)
        #expect(annexBNALTypes(frames[0].data).prefix(2) == [7, 8])
        #expect(annexBNALTypes(frames[0].data).contains(5))

        let dir = try TemporaryDirectory(prefix: "MediaEncodingTests")
        let file = dir.fileURL("pattern.h264")
        try Data(frames.flatMap(\.data)).write(to: file)

        let check = try runTool("ffmpeg", ["-v", "error", "-i", file.path, "-f", "null", "-"])
        #expect(check.status == 0)
        #expect(check.stderr.isEmpty, "ffmpeg reported: \(check.stderr)")

        let probe = try runTool("ffprobe", [
            "-v", "error", "-count_frames", "-select_streams", "v:0",
            "-show_entries", "stream=codec_name,width,height,nb_read_frames", "-of", "csv=p=0", file.path,
        ])
        #expect(probe.status == 0)
        #expect(String(decoding: probe.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) == "h264,\(w),\(h),\(n)")

        checkDecodedPattern(try decodeLuma(file, width: w, height: h), count: n, width: w, height: h, fps: 30)
    }

    @Test("B-frames reorder: pts != dts for some frames, dts strictly increasing", .enabled(if: ffmpegAvailable))
    func bFrames() throws {
        let (w, h, n) = (320, 240, 60)
        let settings = H264Encoder.Settings(width: w, height: h, fps: 30, tune: nil, bFrames: 2)
        let (_, frames) = try encodePattern(settings, count: n)

        #expect(frames.count == n)
        #expect(frames.contains { $0.pts != $0.dts })
        #expect(zip(frames, frames.dropFirst()).allSatisfy { $0.dts < $1.dts })
        #expect(frames.allSatisfy { $0.dts <= $0.pts })
        // x264 starts dts before the first pts so that reordered frames keep dts <= pts.
        #expect(frames[0].dts < 0)
        #expect(frames.map(\.pts).sorted() == (0..<n).map { ptsFor($0) })

        let dir = try TemporaryDirectory(prefix: "MediaEncodingTests")
        let file = dir.fileURL("bframes.h264")
        try Data(frames.flatMap(\.data)).write(to: file)
        let check = try runTool("ffmpeg", ["-v", "error", "-i", file.path, "-f", "null", "-"])
        #expect(check.status == 0 && check.stderr.isEmpty, "ffmpeg reported: \(check.stderr)")
        checkDecodedPattern(try decodeLuma(file, width: w, height: h), count: n, width: w, height: h, fps: 30)
    }

    @Test("zerolatency is dropped from the tune only when B-frames are requested")
    func effectiveTune() {
        #expect(H264Encoder.Settings(width: 64, height: 64, fps: 30).effectiveTune == "zerolatency")
        #expect(H264Encoder.Settings(width: 64, height: 64, fps: 30, bFrames: 2).effectiveTune == nil)
        #expect(H264Encoder.Settings(width: 64, height: 64, fps: 30, tune: "film,zerolatency", bFrames: 1).effectiveTune == "film")
        #expect(H264Encoder.Settings(width: 64, height: 64, fps: 30).keyframeInterval == 60)
    }

    @Test("Keyframes exactly every keyframeInterval frames", arguments: [(0, "zerolatency"), (2, "")])
    func keyframeInterval(bFrames: Int, tune: String) throws {
        let settings = H264Encoder.Settings(
            width: 320, height: 240, fps: 30, tune: tune.isEmpty ? nil : tune, keyframeInterval: 10, bFrames: bFrames)
        let (_, frames) = try encodePattern(settings, count: 45)
        let keyIndices = frames.filter(\.isKeyframe).map { indexFor($0.pts) }.sorted()
        #expect(keyIndices == [0, 10, 20, 30, 40])
        for frame in frames where frame.isKeyframe {
            let types = annexBNALTypes(frame.data)
            #expect(types.contains(5))
            #expect(types.contains(7) && types.contains(8), "repeatHeaders puts SPS/PPS before every IDR")
        }
    }

    @Test("forceKeyframe makes an IDR at the requested picture")
    func forcedKeyframe() throws {
        let encoder = try H264Encoder(settings: .init(width: 160, height: 120, fps: 30, keyframeInterval: 300))
        let pattern = TestPatternVideo(width: 160, height: 120, fps: 30)
        var frames: [EncodedVideoFrame] = []
        for i in 0..<20 {
            frames += try encoder.encode(pattern.frame(index: i), pts: ptsFor(i), forceKeyframe: i == 7)
        }
        frames += try encoder.flush()
        #expect(frames.filter(\.isKeyframe).map { indexFor($0.pts) } == [0, 7])
    }

    @Test("Length-prefixed output tiles into NAL units and carries the same SPS/PPS")
    func lengthPrefixed() throws {
        let settings = H264Encoder.Settings(width: 320, height: 240, fps: 30, annexB: false)
        let (encoder, frames) = try encodePattern(settings, count: 10)
        let (annexBEncoder, _) = try encodePattern(H264Encoder.Settings(width: 320, height: 240, fps: 30), count: 1)
        #expect(encoder.sps == annexBEncoder.sps)
        #expect(encoder.pps == annexBEncoder.pps)
        #expect(frames.count == 10)
        for frame in frames {
            let units = try #require(lengthPrefixedNALs(frame.data))
            #expect(!units.isEmpty)
        }
        let first = try #require(lengthPrefixedNALs(frames[0].data))
        #expect(first.contains(encoder.sps))
        #expect(first.contains(encoder.pps))
        #expect(first.contains { $0[0] & 0x1F == 5 })
    }

    @Test("Timestamps pass through in nanoseconds, including variable frame intervals")
    func variableTimestamps() throws {
        let encoder = try H264Encoder(settings: .init(width: 160, height: 120, fps: 30))
        let pattern = TestPatternVideo(width: 160, height: 120, fps: 30)
        var pts: [Int64] = []
        var t: Int64 = 5_000_000_000
        for i in 0..<30 {
            t += 33_000_000 + Int64((i * 7_919) % 5) * 1_000_000
            pts.append(t)
        }
        var frames: [EncodedVideoFrame] = []
        for (i, p) in pts.enumerated() { frames += try encoder.encode(pattern.frame(index: i), pts: p) }
        frames += try encoder.flush()
        #expect(frames.map(\.pts) == pts)
        #expect(frames.map(\.dts) == pts, "no reordering without B-frames")
    }

    @Test("Profiles and bitrate mode")
    func profilesAndBitrate() throws {
        let baseline = try H264Encoder(settings: .init(width: 320, height: 240, fps: 30, profile: "baseline"))
        #expect(baseline.sps[1] == 66)
        let high = try H264Encoder(settings: .init(width: 320, height: 240, fps: 30, profile: "high"))
        #expect(high.sps[1] == 100)
        let (_, frames) = try encodePattern(
            .init(width: 320, height: 240, fps: 30, rateControl: .bitrate(kbps: 300), keyframeInterval: 30), count: 60)
        let bits = frames.reduce(0) { $0 + $1.data.count } * 8
        // 2 s at 300 kbit/s; ABR converges loosely over such a short clip.
        #expect(bits > 150_000 && bits < 1_500_000, "got \(bits) bits")
    }

    @Test("Invalid settings and frames are rejected with typed errors")
    func errors() throws {
        expectEncoderError(.invalidSettings) { _ = try H264Encoder(settings: .init(width: 321, height: 240, fps: 30)) }
        expectEncoderError(.invalidSettings) { _ = try H264Encoder(settings: .init(width: 320, height: 240, fps: 0)) }
        expectEncoderError(.invalidSettings) { _ = try H264Encoder(settings: .init(width: 320, height: 240, fps: 30, rateControl: .crf(60))) }
        expectEncoderError(.invalidSettings) { _ = try H264Encoder(settings: .init(width: 320, height: 240, fps: 30, preset: "warp-speed")) }
        expectEncoderError(.invalidSettings) { _ = try H264Encoder(settings: .init(width: 320, height: 240, fps: 30, profile: "ultra")) }

        let encoder = try H264Encoder(settings: .init(width: 320, height: 240, fps: 30))
        expectEncoderError(.wrongFrameSize) { _ = try encoder.encode(I420Frame(width: 160, height: 120), pts: 0) }
        var truncated = I420Frame(width: 320, height: 240)
        truncated.v.removeLast()
        expectEncoderError(.wrongFrameSize) { _ = try encoder.encode(truncated, pts: 0) }
        _ = try encoder.encode(I420Frame(width: 320, height: 240), pts: 100)
        expectEncoderError(.invalidSettings) { _ = try encoder.encode(I420Frame(width: 320, height: 240), pts: 100) }
    }
}

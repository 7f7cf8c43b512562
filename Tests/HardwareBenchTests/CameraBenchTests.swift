import Foundation
import Testing
import TestSupport

/// Cameras on real V4L2 drivers: vivid at 640x360@30 in its native YUYV (converted by
/// libv4lconvert in capture-agent) and in YU12; vivid's `disconnect` control mid-recording;
/// an MJPEG webcam (v4l2loopback fed with 1280x720@30 MJPEG).
@Suite("Hardware bench: cameras on vivid and v4l2loopback", .serialized,
       .enabled(if: BenchResults.enabled, "needs HARDWARE_BENCH_RESULTS from scripts/hardware-test.sh (scripts/test.sh runs it)"))
struct CameraBenchTests {
    struct VideoFigures {
        var frames: Int
        var seconds: Double
        var medianInterval: Double
        var fps: Double { seconds > 0 ? Double(frames - 1) / seconds : 0 }
    }

    /// An H.264 track of the expected size whose timestamps strictly increase, on the
    /// device's 30 fps grid, with no more frames than the device's rate allows.
    /// `encoderBound`: the guest's (emulated) CPU cannot encode every frame, so the typical
    /// interval is a multiple of the frame time rather than one frame.
    func checkVideo(_ probe: ProbeResult, label: String, width: Int, height: Int, scenario: String,
                    encoderBound: Bool = false) throws -> VideoFigures {
        let stream = try #require(probe.stream(label: label), "no track \(label)")
        #expect(stream.codecName == "h264")
        #expect(stream.width == width && stream.height == height, "\(label): \(stream.width ?? 0)x\(stream.height ?? 0)")
        let packets = probe.packets(stream: stream.index)
        let tick = probe.secondsPerTick(stream)
        let dts = packets.compactMap(\.dts), pts = packets.compactMap(\.pts).sorted()
        #expect(dts.count == packets.count && zip(dts, dts.dropFirst()).allSatisfy { $0 < $1 }, "\(label): DTS not strictly increasing")
        #expect(Set(pts).count == pts.count, "\(label): repeated PTS")
        let intervals = zip(pts, pts.dropFirst()).map { Double($1 - $0) * tick }.sorted()
        let median = intervals.isEmpty ? 0 : intervals[intervals.count / 2]
        let seconds = Double((pts.last ?? 0) - (pts.first ?? 0)) * tick
        let figures = VideoFigures(frames: packets.count, seconds: seconds, medianInterval: median)
        // Never more frames than the device made.
        #expect(Double(figures.frames) <= seconds * 30 + 2, "\(label): \(figures.frames) frames in \(seconds) s")
        // The intervals are the driver's own timestamps; under TCG they jitter by several ms
        // and the encoder keeps a varying share of the frames, so the median interval is a
        // figure, not a check (the device's rate is checked by expectEveryFrameAccounted).
        if !encoderBound {
            // A sanity floor only: emulated CPUs on a busy machine keep a varying share.
            #expect(Double(figures.frames) >= seconds * 30 * 0.25, "\(label): only \(figures.frames) frames in \(seconds) s")
        }
        figure(scenario, "\(label): \(figures.frames) frames over \(String(format: "%.2f", seconds)) s = \(String(format: "%.1f", figures.fps)) fps, median interval \(String(format: "%.2f", median * 1000)) ms, longest \(String(format: "%.1f", (intervals.last ?? 0) * 1000)) ms")
        return figures
    }

    @Test func vividInNativeYUYVThroughLibv4lconvert() throws {
        let scenario = try BenchResults.scenario("camera-yuyv")
        let probe = try scenario.probeCleanRecording()
        #expect(scenario.agentStatus == 0)
        #expect(probe.streams.count == 1)
        #expect(scenario.agentLog.contains("640x360 YUYV → YU12 (libv4lconvert) @ 30 fps"), "the camera was not captured in YUYV")
        let video = try checkVideo(probe, label: "front", width: 640, height: 360, scenario: scenario.name)
        #expect(video.seconds > 6, "front covers only \(video.seconds) s of an 8 s recording")
        expectEveryFrameAccounted(scenario, video: video)
    }

    /// Every frame the camera made is in the file or reported lost or dropped by the agent:
    /// together they come to the device's 30 fps over the track.
    func expectEveryFrameAccounted(_ scenario: BenchScenario, video: VideoFigures) {
        let reported = scenario.reportedLosses(track: "front")
        let accounted = Double(video.frames + reported) / video.seconds
        #expect(abs(accounted - 30) < 3, "recorded \(video.frames) + reported \(reported) frames in \(video.seconds) s = \(accounted) fps")
        figure(scenario.name, "\(scenario.facts["accelerator"] ?? "?"): \(video.frames) frames recorded + \(reported) reported lost or dropped over \(String(format: "%.2f", video.seconds)) s = \(String(format: "%.1f", accounted)) fps from the device; recorded \(String(format: "%.1f", video.fps)) fps")
    }

    @Test func unpluggingTheCameraEndsItsTrackAndTheMicrophoneGoesOn() throws {
        let scenario = try BenchResults.scenario("camera-disconnect")
        let probe = try scenario.probeCleanRecording()
        #expect(probe.streams.count == 2)
        #expect(scenario.agentLog.contains("640x360 YU12 @ 30 fps"), "the camera was not captured in YU12")
        let video = try checkVideo(probe, label: "front", width: 640, height: 360, scenario: scenario.name)
        expectEveryFrameAccounted(scenario, video: video)
        let front = try #require(probe.stream(label: "front")), dummy = try #require(probe.stream(label: "dummy"))
        let frontSpan = try #require(probe.span(of: front)), dummySpan = try #require(probe.span(of: dummy))
        // The camera was unplugged 5 s after the session was accepted; the recording lasts 12 s.
        #expect(frontSpan.end < dummySpan.end - 3, "front ends at \(frontSpan.end) s, the microphone at \(dummySpan.end) s")
        #expect(dummySpan.end - dummySpan.start > 10, "the microphone's track lasts \(dummySpan.end - dummySpan.start) s")
        // The operator reads why the track ended: the device and that it went away.
        let failure = scenario.agentLog.split(separator: "\n").first { $0.contains("capture failed") && $0.contains("/dev/video0") }
        #expect(failure != nil, "no capture-failure line naming /dev/video0 in agent.log")
        #expect(failure.map { $0.contains("disappeared") || $0.contains("ENODEV") || $0.contains("unplugged") } == true, "\(failure ?? "")")
        figure(scenario.name, "front ends at \(String(format: "%.2f", frontSpan.end)) s after \(video.frames) frames; dummy microphone runs to \(String(format: "%.2f", dummySpan.end)) s; agent says: \(failure.map { String($0.split(separator: "]").last ?? "") } ?? "-")")
    }

    @Test func mjpegWebcamAt720p30() throws {
        let scenario = try BenchResults.scenario("mjpeg")
        let probe = try scenario.probeCleanRecording()
        #expect(scenario.agentStatus == 0)
        #expect(scenario.agentLog.contains("1280x720 MJPG → YU12 (libv4lconvert) @ 30 fps"), "the camera was not captured in MJPEG at 30 fps")
        // Emulated (TCG), 720p MJPEG decoding plus x264 needs several times the guest's two
        // CPUs: the agent keeps what it can encode and reports the rest. On KVM it keeps up.
        let encoderBound = !scenario.ranOnKVM
        let video = try checkVideo(probe, label: "front", width: 1280, height: 720, scenario: scenario.name, encoderBound: encoderBound)
        #expect(video.seconds > 7, "front covers only \(video.seconds) s of a 10 s recording")
        expectEveryFrameAccounted(scenario, video: video)
        if !encoderBound { #expect(video.fps > 27, "recorded at \(video.fps) fps") }
    }
}

import Foundation
import Shared
import Logging
import MediaEncoding
import Testing
import TestSupport
import WireProtocol
@testable import CaptureAgentCore

@Suite("Drop at source, encoder stages, backoff, specs")
struct PipelineAndEncodingTests {
    @Test func theQueueDropsWhenFullAndPlacesTheCountBeforeTheNextElement() {
        let queue = DropAtSourceQueue<Int>(capacity: 2)
        #expect(queue.offer(0))
        #expect(queue.offer(1))
        #expect(!queue.offer(2))
        #expect(!queue.offer(3))
        guard case .element(0, let d0) = queue.take() else { Issue.record("expected 0"); return }
        #expect(d0.isEmpty)
        #expect(queue.offer(4))
        queue.recordLost(5)
        queue.close()
        guard case .element(1, let d1) = queue.take(), case .element(4, let d4) = queue.take(), case .end(let dEnd) = queue.take() else {
            Issue.record("unexpected order")
            return
        }
        #expect(d1.isEmpty)
        #expect(d4 == .init(overflow: 2, lost: 0))
        #expect(dEnd == .init(overflow: 0, lost: 5))
        #expect(queue.totalDropped == 2 && queue.totalLost == 5)
    }

    @Test func aSlowEncoderMakesTheLiveSourceDropCountedAndReportedInPlace() {
        // The encoder blocks on its first frame until the source has produced everything.
        let gate = DispatchSemaphore(value: 0)
        let encoder = PassThroughEncoder(track: 3, gate: gate)
        let sourceMayContinue = DispatchSemaphore(value: 0)
        let source = CountingSource(count: 10, waitBefore: 1, proceed: sourceMayContinue)
        let sink = RecordingSink()
        let pipeline = SourcePipeline(track: 3, label: "mic", source: source, encoder: encoder, queueCapacity: 2,
                                      sink: sink, logger: Logger(label: "test"))
        pipeline.run()
        encoder.firstUnitTaken.wait()   // frame 0 is inside the encoder
        sourceMayContinue.signal()      // frames 1…9 arrive while it is stuck: 1, 2 fit
        while pipeline.dropCounts.overflow < 7 { usleep(1000) }
        gate.signal()
        pipeline.waitUntilFinished()
        #expect(sink.events == [
            .sample(track: 3, pts: 0, keyframe: true),
            .sample(track: 3, pts: 1, keyframe: true),
            .sample(track: 3, pts: 2, keyframe: true),
            .dropped(track: 3, count: 7, reason: .encoderError),
            .ended(track: 3, reason: .endOfStream, message: ""),
        ])
    }

    /// A stop at an instant: the source goes on until its units reach it, so every track of a
    /// session ends at the same moment; the unit at the instant is not recorded. A stop
    /// without one (a cancel) ends after the read in progress.
    @Test(arguments: [(Int64?.some(7), Int64(6)), (nil, 3)])
    func aStopAtAnInstantReadsUpToIt(instant: Int64?, lastRecorded: Int64) {
        let proceed = DispatchSemaphore(value: 0)
        let source = CountingSource(count: 20, waitBefore: 3, proceed: proceed)
        let sink = RecordingSink()
        let pipeline = SourcePipeline(track: 5, label: "mic", source: source, encoder: PassThroughEncoder(track: 5), queueCapacity: 32,
                                      sink: sink, logger: Logger(label: "t"), clock: ManualClock(start: 0))
        pipeline.run()
        while sink.events.count < 3 { usleep(1000) }   // units 0…2 are through; the source waits before 3
        pipeline.stop(at: instant)
        proceed.signal()
        pipeline.waitUntilFinished()
        #expect(sink.events == (0...lastRecorded).map { .sample(track: 5, pts: $0, keyframe: true) } + [.ended(track: 5, reason: .endOfStream, message: "")])
    }

    @Test func aNonLiveSourceWaitsInsteadOfDropping() {
        let gate = DispatchSemaphore(value: 0)
        let encoder = PassThroughEncoder(track: 1, gate: gate)
        let source = CountingSource(count: 20, isLive: false)
        let sink = RecordingSink()
        let pipeline = SourcePipeline(track: 1, label: "file", source: source, encoder: encoder, queueCapacity: 2, sink: sink, logger: Logger(label: "t"))
        pipeline.run()
        encoder.firstUnitTaken.wait()
        gate.signal()
        pipeline.waitUntilFinished()
        #expect(sink.events.count == 21)
        #expect(pipeline.dropCounts.overflow == 0)
    }

    @Test func aFailingSourceEndsItsTrackWithTheError() {
        let sink = RecordingSink()
        let pipeline = SourcePipeline(track: 2, label: "x", source: CountingSource(count: 10, failAt: 3), encoder: PassThroughEncoder(track: 2),
                                      queueCapacity: 8, sink: sink, logger: Logger(label: "t"))
        pipeline.run()
        pipeline.waitUntilFinished()
        #expect(sink.events.last == .ended(track: 2, reason: .error, message: "counting: gone"))
        #expect(sink.events.count == 4)
    }

    @Test func h264SamplesAreLengthPrefixedWithParameterSetsInTheDescriptor() throws {
        let encoder = try H264SampleEncoder(track: 1, width: 64, height: 48, fpsNumerator: 30, fpsDenominator: 1,
                                            settings: VideoEncodingSettings(preset: "ultrafast", threads: 1))
        guard case .h264(let format) = encoder.mediaFormat else { Issue.record("not h264"); return }
        #expect(format.sequenceParameterSets.first?.first.map { $0 & 0x1F } == 7)
        #expect(format.pictureParameterSets.first?.first.map { $0 & 0x1F } == 8)
        let pattern = TestPatternVideo(width: 64, height: 48, fps: 30)
        var samples: [EncodedSample] = []
        for i in 0..<3 { samples += try encoder.encode(.video(pattern.frame(index: i), pts: Int64(i) * 33_333_333)) }
        // After a downstream drop the runtime asks for a keyframe; x264 may hold a picture
        // back, so the flags are checked on everything that comes out.
        encoder.requestKeyframe()
        samples += try encoder.encode(.video(pattern.frame(index: 3), pts: 100_000_000))
        samples += try encoder.flush()
        #expect(samples.map(\.pts) == [0, 33_333_333, 66_666_666, 100_000_000])
        #expect(samples.map(\.isKeyframe) == [true, false, false, true])
        #expect(samples.allSatisfy { $0.dts == $0.pts && $0.duration == 33_333_333 })
        // Walk the length prefixes: they must cover the access unit exactly.
        for sample in samples {
            var data = sample.data
            var nalTypes: [UInt8] = []
            while data.readableBytes > 0 {
                guard let length = data.readInteger(as: UInt32.self), let nal = data.readBytes(length: Int(length)), !nal.isEmpty else {
                    Issue.record("length prefix does not fit the access unit")
                    break
                }
                nalTypes.append(nal[0] & 0x1F)
            }
            #expect(nalTypes.contains(sample.isKeyframe ? 5 : 1))
        }
    }

    @Test func opusRegroupsAnyChunkingInto20msPacketsStampedByTheirFirstSample() throws {
        let encoder = try OpusSampleEncoder(track: 2, channels: 1, settings: AudioEncodingSettings())
        guard case .opus(let format) = encoder.mediaFormat else { Issue.record("not opus"); return }
        #expect(format.opusHead.starts(with: Array("OpusHead".utf8)) && format.channels == 1)
        let tone = TestToneAudio()
        var out: [EncodedSample] = []
        var index: Int64 = 0
        // Chunks of 720 samples (15 ms): packets straddle chunks.
        for _ in 0..<5 {
            let pts = 1_000_000_000 + index * 1_000_000_000 / 48000
            out += try encoder.encode(.audio(tone.samples(from: index, count: 720), frames: 720, pts: pts))
            index += 720
        }
        // 3600 = 3 × 960 + 720: the fourth packet is padded with 240 samples of silence, fewer
        // than the encoder's 312-sample lookahead, so a fifth, silent packet carries the rest out.
        out += try encoder.flush()
        #expect(out.map(\.pts) == [1_000_000_000, 1_020_000_000, 1_040_000_000, 1_060_000_000, 1_080_000_000])
        #expect(out.allSatisfy { $0.isKeyframe && $0.duration == 20_000_000 && $0.data.readableBytes > 0 })
    }

    /// Decoded samples (packets × 960 − pre-skip) cover the input exactly when the end needs it.
    @Test(arguments: [(input: 3360, packets: 4), (input: 3600, packets: 5), (input: 2880, packets: 4), (input: 960 - 312, packets: 1)])
    func opusEndsWithEnoughPacketsToCoverTheLookahead(input: Int, packets: Int) throws {
        let encoder = try OpusSampleEncoder(track: 2, channels: 1, settings: AudioEncodingSettings())
        var out = try encoder.encode(.audio(TestToneAudio().samples(from: 0, count: input), frames: input, pts: 0))
        out += try encoder.flush()
        #expect(out.count == packets)
        #expect(out.count * 960 - 312 >= input)
        #expect((out.count - 1) * 960 - 312 < input, "no packet more than needed")
        #expect(try encoder.flush().isEmpty, "a second flush adds nothing")
    }

    @Test func backoffDoublesUpToTheMaximumWithInjectedJitter() {
        var backoff = ReconnectBackoff(initial: 100, maximum: 1000)
        var low = ScriptedRandom(values: [0])
        let lows = (0..<6).map { _ in backoff.nextDelay(using: &low) }
        #expect(lows == [50, 100, 200, 400, 500, 500])  // half of 100, 200, 400, 800, 1000, 1000
        backoff.reset()
        var high = ScriptedRandom(values: [UInt64.max])
        let highs = (0..<6).map { _ in backoff.nextDelay(using: &high) }
        #expect(highs == [100, 200, 400, 800, 1000, 1000])
        backoff.reset()
        var rng = SplitMix64(seed: 42)
        for attempt in 0..<10 {
            let c = min(1000, 100 << attempt)
            let d = backoff.nextDelay(using: &rng)
            #expect(d >= Int64(c / 2) && d <= Int64(c))
        }
    }

    @Test func parsesSourceSpecs() throws {
        #expect(try SourceSpec.parse("front=v4l2:/dev/video0").kind == .v4l2(path: "/dev/video0", width: 1280, height: 720, fps: 30))
        #expect(try SourceSpec.parse("front=v4l2:/dev/video2?size=1920x1080&fps=25").kind == .v4l2(path: "/dev/video2", width: 1920, height: 1080, fps: 25))
        #expect(try SourceSpec.parse("usb=v4l2:/dev/video2?size=640x480&format=YUYV").kind
                == .v4l2(path: "/dev/video2", width: 640, height: 480, fps: 30, deviceFormat: V4L2PixelFormat.yuyv))
        #expect(try SourceSpec.parse("be=v4l2:/dev/video3?format=Y16").kind
                == .v4l2(path: "/dev/video3", width: 1280, height: 720, fps: 30, deviceFormat: V4L2PixelFormat.fourcc("Y16 ")))
        #expect(try SourceSpec.parse("back=test:640x360@25").kind == .testVideo(width: 640, height: 360, fps: 25))
        #expect(try SourceSpec.parse("back=test").kind == .testVideo(width: 1280, height: 720, fps: 30))
        #expect(try SourceSpec.parse("tone=test:audio?channels=2").kind == .testAudio(channels: 2))
        #expect(try SourceSpec.parse("mic=alsa:hw:1,0?channels=2").kind == .alsa(device: "hw:1,0", channels: 2))
        #expect(try SourceSpec.parse("mic=alsa:default").kind == .alsa(device: "default", channels: 1))
        #expect(try SourceSpec.parse("clip=y4m:/tmp/a.y4m").kind == .y4m(path: "/tmp/a.y4m"))
        #expect(try SourceSpec.parse("voice=wav:rel/a.wav").kind == .wav(path: "rel/a.wav"))
    }

    @Test(arguments: [
        ("v4l2:/dev/video0", "missing NAME="),
        ("a b=test", "must be 1…64"),
        ("x=webcam:/dev/video0", "unknown source kind"),
        ("x=v4l2:video0", "device path"),
        ("x=v4l2:/dev/video0?size=big", "size must be WxH"),
        ("x=v4l2:/dev/video0?format=MJPEG", "V4L2 fourcc"),
        ("x=test:640x360", "test:WxH@FPS"),
        ("x=test:641x360@30", "even"),
        ("x=alsa:default?channels=6", "channels must be 1 or 2"),
        ("x=alsa:", "device name"),
        ("x=y4m:", "file path"),
        ("x=wav:/a.wav?fps=3", "does not apply"),
    ])
    func rejectsBadSourceSpecs(text: String, expected: String) {
        let error = #expect(throws: SourceSpec.ParseError.self) { try SourceSpec.parse(text) }
        #expect(error?.description.contains(expected) == true, "\(error?.description ?? "")")
        #expect(error?.description.contains("expected NAME=") == true)
    }

    @Test func parsesServerAddresses() throws {
        #expect(try parseServerAddress("rec.local:7000") == ("rec.local", 7000))
        #expect(try parseServerAddress("rec.local") == ("rec.local", 7443))
        #expect(try parseServerAddress("[::1]:9000") == ("::1", 9000))
        #expect(throws: ConfigError.self) { try parseServerAddress("::1:9000") }
        #expect(throws: ConfigError.self) { try parseServerAddress("host:0") }
        #expect(throws: ConfigError.self) { try parseServerAddress(":80") }
    }

    @Test func theExampleConfigFileDecodes() throws {
        // Tests run from the package root.
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../deploy/capture-agent.example.json").standardized.path
        let file = try AgentConfigFile.load(path: path)
        #expect(file.agentID != nil)
        #expect(try parseServerAddresses(file.servers ?? [], origin: "servers").count == 2, "the example shows a fleet of two")
        #expect(file.stopTimeoutSeconds == 30)
        for spec in file.sources ?? [] { _ = try SourceSpec.parse(spec) }
        let dir = try TemporaryDirectory(prefix: "capture-agent-tests")
        let bad = try dir.file("bad.json", Array(#"{"sources": "front=test"}"#.utf8))
        let error = #expect(throws: ConfigError.self) { try AgentConfigFile.load(path: bad) }
        #expect(error?.message.contains("sources") == true)
    }

    /// A misspelt key is refused with the near miss, at the top level and inside an object;
    /// `labels` holds the operator's own keys and takes any.
    @Test func unknownConfigKeysAreRefusedWithADidYouMean() throws {
        let dir = try TemporaryDirectory(prefix: "capture-agent-tests")
        let misspelt = try dir.file("misspelt.json", Array(#"{"sever": "rec:7443", "labels": {"anything": "goes"}}"#.utf8))
        let error1 = #expect(throws: ConfigError.self) { try AgentConfigFile.load(path: misspelt) }
        #expect(error1?.message.contains(#"unknown key "sever" (did you mean "server"?) at the top level"#) == true, "\(error1?.message ?? "")")
        let nested = try dir.file("nested.json", Array(#"{"video": {"presett": "fast"}, "audio": {"complexity": 5}}"#.utf8))
        let error2 = #expect(throws: ConfigError.self) { try AgentConfigFile.load(path: nested) }
        #expect(error2?.message.contains(#""presett" (did you mean "preset"?) in "video""#) == true, "\(error2?.message ?? "")")
        let fine = try dir.file("fine.json", Array(#"{"server": "rec:7443", "labels": {"room": "A"}, "audio": {"complexity": 5}}"#.utf8))
        #expect(try AgentConfigFile.load(path: fine).audio?.complexity == 5)
    }
}

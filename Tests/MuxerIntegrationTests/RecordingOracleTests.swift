import TestSupport
import Foundation
import Shared
import Testing

/// Complete recordings judged by ffprobe/ffmpeg (scenarios 1–6 and 9 of the acceptance list).
@Suite("Finished recordings pass the ffprobe/ffmpeg oracles")
struct RecordingOracleTests {
    @Test("1 video track, 320x240@30, 90 frames")
    func singleVideoTrack() throws {
        let dir = try TemporaryDirectory(prefix: "single")
        let recording = try MediaGenerator.generate([.video(.init(id: 1, label: "front", frames: 90))])
        let outcome = try record(recording, directory: dir.path)
        assertBookkeeping(outcome, recording: recording)
        let summary = try #require(outcome.summary)
        #expect(summary.segments.count == 1)
        #expect(summary.segments.first?.path == outcome.path)
        let probe = try #require(assertOracles(file: outcome.path, expected: recording.expected))
        assertFrameCounters(file: outcome.path, probe: probe, track: recording.expected[0])
        #expect(dir.listing() == ["rec.mp4"], "leftover files: \(dir.listing())")
    }

    @Test("2 cameras + mic for 4 s: every packet, and frame counters decode back 0..N-1")
    func twoCamerasAndMic() throws {
        let dir = try TemporaryDirectory(prefix: "multi")
        let recording = try MediaGenerator.generate([
            .video(.init(id: 1, label: "front", frames: 120)),
            .video(.init(id: 2, label: "back", frames: 120)),
            .audio(.init(id: 3, label: "mic", packets: 200)),
        ])
        let outcome = try record(recording, directory: dir.path)
        assertBookkeeping(outcome, recording: recording)
        #expect(outcome.fragmentReports.count >= 3, "expected ~1 s fragments, got \(outcome.fragmentReports.count)")
        let probe = try #require(assertOracles(file: outcome.path, expected: recording.expected))
        for track in recording.expected where track.isVideo {
            assertFrameCounters(file: outcome.path, probe: probe, track: track)
        }
        // Streams come in track order.
        #expect(probe.streams.map { $0.handlerName ?? "" } == ["front", "back", "mic"])
    }

    @Test("Audio only")
    func audioOnly() throws {
        let dir = try TemporaryDirectory(prefix: "audio")
        let recording = try MediaGenerator.generate([.audio(.init(id: 7, label: "mic", packets: 150))])
        let outcome = try record(recording, directory: dir.path)
        assertBookkeeping(outcome, recording: recording)
        let probe = try #require(assertOracles(file: outcome.path, expected: recording.expected))
        let first = try #require(probe.packets.first)
        #expect(first.pts == -Int64(recording.expected[0].preSkip), "first Opus packet at \(first.pts ?? 0), expected -preSkip")
    }

    @Test("Audio starts 500 ms after video: offset kept (empty edit)")
    func lateAudio() throws {
        let dir = try TemporaryDirectory(prefix: "lateaudio")
        let recording = try MediaGenerator.generate([
            .video(.init(id: 1, label: "front", frames: 90)),
            .audio(.init(id: 2, label: "mic", packets: 125, startOffset: 500_000_000)),
        ])
        let outcome = try record(recording, directory: dir.path)
        assertBookkeeping(outcome, recording: recording)
        let probe = try #require(assertOracles(file: outcome.path, expected: recording.expected))
        let video = try #require(probe.stream(label: "front"))
        let audio = try #require(probe.stream(label: "mic"))
        #expect(abs((video.startTime ?? -1) - 0) < 1e-6, "video start_time \(video.startTime ?? -1)")
        // ffmpeg's start_time skips the pre-skip samples: exactly the 0.5 s offset.
        #expect(abs((audio.startTime ?? -1) - 0.5) <= 1.0 / 48000, "audio start_time \(audio.startTime ?? -1), expected 0.5")
        // The first packet itself sits at 0.5 s minus the pre-skip.
        let first = probe.packets(stream: audio.index).first?.pts
        #expect(first == 24000 - Int64(recording.expected[1].preSkip), "first audio pts \(first ?? 0)")
    }

    @Test("Back camera starts 1 s late: offset kept (empty edit)")
    func lateCamera() throws {
        let dir = try TemporaryDirectory(prefix: "latecam")
        let recording = try MediaGenerator.generate([
            .video(.init(id: 1, label: "front", frames: 120)),
            .video(.init(id: 2, label: "back", frames: 90, startOffset: 1_000_000_000)),
            .audio(.init(id: 3, label: "mic", packets: 200)),
        ])
        let outcome = try record(recording, directory: dir.path)
        assertBookkeeping(outcome, recording: recording)
        let probe = try #require(assertOracles(file: outcome.path, expected: recording.expected))
        let back = try #require(probe.stream(label: "back"))
        #expect(abs((back.startTime ?? -1) - 1.0) <= 1.0 / 90000, "back start_time \(back.startTime ?? -1), expected 1.0")
        assertFrameCounters(file: outcome.path, probe: probe, track: recording.expected[1])
    }

    @Test("B-frames: pts != dts, ctts present, negative first dts, packets match")
    func bFrames() throws {
        let dir = try TemporaryDirectory(prefix: "bframes")
        let recording = try MediaGenerator.generate([
            .video(.init(id: 1, label: "front", frames: 90, bFrames: 2)),
            .audio(.init(id: 2, label: "mic", packets: 150)),
        ])
        let input = recording.expected[0].samples
        try #require(input.contains { $0.pts != $0.dts }, "x264 produced no reordered frames")
        let outcome = try record(recording, directory: dir.path)
        assertBookkeeping(outcome, recording: recording)
        let probe = try #require(assertOracles(file: outcome.path, expected: recording.expected))
        let stream = try #require(probe.stream(label: "front"))
        let packets = probe.packets(stream: stream.index)
        #expect(packets.contains { $0.pts != $0.dts }, "no packet with pts != dts")
        #expect((packets.first?.dts ?? 0) < 0, "first dts \(packets.first?.dts ?? 0), expected negative")
        #expect((packets.first?.pts ?? -1) == 0, "first pts \(packets.first?.pts ?? -1)")
        let trace = try runTool("ffprobe", ["-v", "trace", "-hide_banner", outcome.path])
        #expect(trace.stderr.contains("type:'ctts'"), "no ctts box in the trace")
        assertFrameCounters(file: outcome.path, probe: probe, track: recording.expected[0])
    }

    @Test("Rotation → ffprobe display matrix", arguments: [(90, -90.0), (180, 180.0), (270, 90.0)])
    func rotation(degrees: Int, ffprobeRotation: Double) throws {
        let dir = try TemporaryDirectory(prefix: "rot\(degrees)")
        let recording = try MediaGenerator.generate([
            .video(.init(id: 1, label: "front", frames: 30, rotation: degrees)),
            .video(.init(id: 2, label: "back", frames: 30)),
        ])
        let outcome = try record(recording, directory: dir.path)
        let probe = try #require(assertOracles(file: outcome.path, expected: recording.expected))
        let rotated = try #require(probe.stream(label: "front"))
        let rotation = try #require(rotated.displayRotation, "no display matrix side data: \(rotated.raw["side_data_list"] ?? "none")")
        if abs(ffprobeRotation) == 180 {
            #expect(abs(rotation) == 180, "rotation \(rotation)")
        } else {
            #expect(rotation == ffprobeRotation, "rotation \(rotation), expected \(ffprobeRotation)")
        }
        let plain = try #require(probe.stream(label: "back"))
        #expect(plain.displayRotation == nil || plain.displayRotation == 0, "unrotated track shows rotation \(plain.displayRotation ?? 0)")
    }

    @Test("Faststart: moov before mdat, oracles pass")
    func faststart() throws {
        let dir = try TemporaryDirectory(prefix: "faststart")
        let recording = try MediaGenerator.generate([
            .video(.init(id: 1, label: "front", frames: 90)),
            .video(.init(id: 2, label: "back", frames: 90)),
            .audio(.init(id: 3, label: "mic", packets: 150)),
        ])
        let outcome = try record(recording, directory: dir.path) { $0.finalizeMode = .faststart }
        assertBookkeeping(outcome, recording: recording)
        let boxes = try topLevelBoxes(outcome.path)
        #expect(boxes.map(\.type) == ["ftyp", "moov", "mdat"], "top-level order \(boxes.map(\.type))")
        let probe = try #require(assertOracles(file: outcome.path, expected: recording.expected))
        assertFrameCounters(file: outcome.path, probe: probe, track: recording.expected[1])
        #expect(dir.listing() == ["rec.mp4"], "temporary files left: \(dir.listing())")
        // ffprobe's own view agrees: moov is parsed before the first mdat.
        let trace = try runTool("ffprobe", ["-v", "trace", "-hide_banner", outcome.path])
        let moov = trace.stderr.range(of: "type:'moov'")
        let mdat = trace.stderr.range(of: "type:'mdat'")
        #expect(moov != nil && mdat != nil && moov!.lowerBound < mdat!.lowerBound, "trace order")
    }
}

import TestSupport
import Foundation
import Shared
import Testing

/// One track of a session as a fragmented MP4 for Media Source Extensions (issue 17), from
/// finished segments and from a file still being recorded, judged by ffprobe and ffmpeg.
@Suite("Track streams")
struct TrackStreamTests {
    private static func sources(_ dir: TemporaryDirectory, liveLast: Bool = false) throws -> [SessionExport.Source] {
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".mp4") }.sorted()
        return names.enumerated().map { SessionExport.Source(path: dir.path + "/" + $1, isLive: liveLast && $0 == names.count - 1) }
    }

    /// Init segment and every fragment the stream has now, written to `path`.
    private static func drain(_ stream: TrackStream, into data: inout Data, holdingLast: Bool = false) throws -> Int {
        var fragments = 0
        while let fragment = try stream.nextFragment(holdingLast: holdingLast) {
            data.append(contentsOf: fragment)
            fragments += 1
        }
        return fragments
    }

    /// ffmpeg decodes the stream silently and ffprobe finds exactly `expected`'s packets, at
    /// session times (tfdt counts from the session's time zero).
    private static func check(_ data: Data, expected: ExpectedTrack, origin: Int64, in dir: TemporaryDirectory, name: String) throws {
        let path = dir.path + "/" + name
        try data.write(to: URL(fileURLWithPath: path))
        let decode = try ffmpegDecodeCheck(path)
        #expect(decode.status == 0 && decode.stderr.isEmpty, "ffmpeg on \(name): \(decode.stderr.prefix(600))")
        let probe = try FFprobe.probe(path).result
        try #require(probe.streams.count == 1, "\(name): \(probe.streams.count) streams")
        #expect(probe.streams[0].codecName == expected.codecName)
        comparePackets(probe.packets(stream: 0), expectedPackets(expected, origin: origin), what: name, sourceLocation: #_sourceLocation)
        if expected.isVideo {
            assertFrameCounters(file: path, probe: probe, track: expected, first: expected.samples[0].index)
        }
    }

    @Test("a finished segmented session: each track streams every sample once, at session time, from a keyframe")
    func finishedSession() throws {
        let dir = try TemporaryDirectory(prefix: "stream")
        let recording = try MediaGenerator.twoCamerasAndAMic()
        _ = try record(recording, directory: dir.path) { $0.maxSegmentDuration = 2_000_000_000 }
        let origin = presentationOrigin(recording.expected)
        let sources = try Self.sources(dir)
        try #require(sources.count >= 3)

        let back = try TrackStream.open(sources: sources, label: "back", fromNanos: 0)
        #expect(back.mimeType.hasPrefix("video/mp4; codecs=\"avc1.") && back.mimeType.count == "video/mp4; codecs=\"avc1.64001F\"".count, "\(back.mimeType)")
        var data = Data(back.initSegment)
        let fragments = try Self.drain(back, into: &data)
        #expect(fragments >= 7, "\(fragments) fragments: one per keyframe interval")
        try Self.check(data, expected: recording.expected[1], origin: origin, in: dir, name: "back.mp4")

        // Sound: every packet shown at or after the session's start (the first may fall before
        // it by the pre-skip, and a fragment's time cannot be negative).
        let mic = try TrackStream.open(sources: sources, label: "mic", fromNanos: 0)
        #expect(mic.mimeType == "audio/mp4; codecs=\"opus\"")
        var sound = Data(mic.initSegment)
        _ = try Self.drain(mic, into: &sound)
        let micTrack = recording.expected[2]
        let shown = micTrack.samples.firstIndex { ticks($0.pts - origin, 48000) - Int64(micTrack.preSkip) >= 0 }!
        try Self.check(sound, expected: micTrack.slice(shown ..< micTrack.samples.count), origin: origin, in: dir, name: "mic.mp4")

        // From 3.2 s: the keyframe at 3 s, then on to the end.
        let later = try TrackStream.open(sources: sources, label: "front", fromNanos: 3_200_000_000)
        let key = recording.expected[0].samples.lastIndex { $0.isKeyframe && $0.pts - origin <= 3_200_000_000 }!
        #expect(later.startNanos == recording.expected[0].samples[key].pts - origin)
        var part = Data(later.initSegment)
        _ = try Self.drain(later, into: &part)
        try Self.check(part, expected: recording.expected[0].slice(key ..< 210), origin: origin, in: dir, name: "front-later.mp4")
        #expect(throws: ExportError.self) { try TrackStream.open(sources: sources, label: "side", fromNanos: 0) }
    }

    @Test("a live session: the stream starts at the last durable keyframe and, refreshed, goes on to the end without a gap or a repeat")
    func liveSession() throws {
        let dir = try TemporaryDirectory(prefix: "stream-live")
        let recording = try MediaGenerator.twoCamerasAndAMic()
        let configuration = makeConfiguration(recording, directory: dir.path) { $0.maxSegmentDuration = 2_000_000_000 }
        let muxer = try MP4Muxer(configuration: configuration)
        try muxer.start()
        let half = recording.samples.count / 2
        for sample in recording.samples[..<half] { _ = try muxer.append(sample.muxerSample()) }

        let stream = try TrackStream.open(sources: try Self.sources(dir, liveLast: true), label: "back", fromNanos: nil)
        var data = Data(stream.initSegment)
        var fragments = try Self.drain(stream, into: &data, holdingLast: true)
        #expect(stream.pendingSamples == 1, "the newest sample waits for the one after it")
        // Fed in four steps, refreshed after each, like the server's live loop.
        let rest = Array(recording.samples[half...])
        for step in 0 ..< 4 {
            for sample in rest[rest.count * step / 4 ..< rest.count * (step + 1) / 4] { _ = try muxer.append(sample.muxerSample()) }
            try stream.refresh(sources: try Self.sources(dir, liveLast: true))
            fragments += try Self.drain(stream, into: &data, holdingLast: true)
        }
        _ = try muxer.finish()
        try stream.refresh(sources: try Self.sources(dir))
        fragments += try Self.drain(stream, into: &data)
        #expect(stream.pendingSamples == 0)

        let origin = presentationOrigin(recording.expected)
        let back = recording.expected[1]
        let first = try #require(back.samples.firstIndex { $0.pts - origin == stream.startNanos })
        #expect(back.samples[first].isKeyframe && first > 0, "the live edge is a later keyframe: frame \(first)")
        try Self.check(data, expected: back.slice(first ..< back.samples.count), origin: origin, in: dir, name: "live.mp4")
    }

    /// Sound, where every packet is a keyframe: the live edge is the newest packet, which waits
    /// for the one after it. Found by the web console's browser test: the stream chose the
    /// newest packet again at every refresh and never sent one.
    @Test("a live session's sound: the stream keeps the start it chose and goes on to the end")
    func liveSound() throws {
        let dir = try TemporaryDirectory(prefix: "stream-live-sound")
        let recording = try MediaGenerator.twoCamerasAndAMic()
        let muxer = try MP4Muxer(configuration: makeConfiguration(recording, directory: dir.path) { $0.maxSegmentDuration = 2_000_000_000 })
        try muxer.start()
        let half = recording.samples.count / 2
        for sample in recording.samples[..<half] { _ = try muxer.append(sample.muxerSample()) }

        let stream = try TrackStream.open(sources: try Self.sources(dir, liveLast: true), label: "mic", fromNanos: nil)
        var data = Data(stream.initSegment)
        #expect(try Self.drain(stream, into: &data, holdingLast: true) == 0)
        let rest = Array(recording.samples[half...])
        var fragments = 0
        for step in 0 ..< 4 {
            for sample in rest[rest.count * step / 4 ..< rest.count * (step + 1) / 4] { _ = try muxer.append(sample.muxerSample()) }
            try stream.refresh(sources: try Self.sources(dir, liveLast: true))
            fragments += try Self.drain(stream, into: &data, holdingLast: true)
        }
        #expect(fragments >= 2, "\(fragments) fragments while the session recorded (before the fix: none)")
        _ = try muxer.finish()
        try stream.refresh(sources: try Self.sources(dir))
        _ = try Self.drain(stream, into: &data)

        let origin = presentationOrigin(recording.expected)
        let mic = recording.expected[2]
        let startTicks = ticks(stream.startNanos, 48000)
        let first = try #require(mic.samples.firstIndex { ticks($0.pts - origin, 48000) - Int64(mic.preSkip) == startTicks },
                                 "the stream's start (\(stream.startNanos) ns) is a packet of the recording")
        #expect(first > 0, "the live edge is a later packet")
        try Self.check(data, expected: mic.slice(first ..< mic.samples.count), origin: origin, in: dir, name: "live-mic.mp4")
    }
}

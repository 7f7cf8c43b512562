import TestSupport
import Foundation
import Shared
import Testing

/// Exporting a time range of a segmented session into one regular MP4 (issue 17), judged by
/// ffprobe, ffmpeg and the frame numbers drawn into every picture.
@Suite("Session export")
struct SessionExportTests {
    /// 7 s of two cameras (keyframe every second) and a microphone in 2 s segments.
    private static func recordSegmented(in dir: TemporaryDirectory, finish: Bool = true) throws -> (GeneratedRecording, [String]) {
        let recording = try MediaGenerator.generate([
            .video(.init(id: 1, label: "front", frames: 210)),
            .video(.init(id: 2, label: "back", frames: 210)),
            .audio(.init(id: 3, label: "mic", packets: 350)),
        ])
        let outcome = try record(recording, directory: dir.path, finish: finish) { $0.maxSegmentDuration = 2_000_000_000 }
        let paths = (try FileManager.default.contentsOfDirectory(atPath: dir.path)).filter { $0.hasSuffix(".mp4") }.sorted()
            .map { dir.path + "/" + $0 }
        if finish { #expect(paths == outcome.summary?.segments.map(\.path)) }
        return (recording, paths)
    }

    /// Writes the export the way the server streams it: head, then every piece.
    private static func write(_ export: SessionExport, to path: String) throws {
        var data = Data(export.head)
        for piece in export.pieces {
            data.append(contentsOf: try export.read(file: piece.file, offset: piece.offset, count: Int(piece.length)))
        }
        #expect(UInt64(data.count) == export.size)
        try data.write(to: URL(fileURLWithPath: path))
    }

    /// What the export must hold of `track`, worked out from the input alone: pictures from the
    /// keyframe at or before `from`; sound from 80 ms (Opus pre-roll) before `from`; both up to
    /// the last sample shown before `to`.
    private static func expectedSlice(_ track: ExpectedTrack, origin: Int64, from: Int64, to: Int64) -> ExpectedTrack {
        let shown = track.samples.map { $0.pts - origin - (track.isVideo ? 0 : Int64(track.preSkip) * 1_000_000_000 / 48000) }
        let last = shown.lastIndex { $0 < to }!
        let first: Int
        if track.isVideo {
            first = track.samples.indices.last { track.samples[$0].isKeyframe && shown[$0] <= from }!
        } else {
            first = shown.indices.last { shown[$0] <= from - 80_000_000 }!
        }
        return track.slice(first ..< last + 1)
    }

    @Test("2.51 s to 5.31 s of 'back' + 'mic' across three segments: one regular MP4, those tracks only, exact frames, ffmpeg silent")
    func rangeAcrossSegments() throws {
        let dir = try TemporaryDirectory(prefix: "export")
        let (recording, paths) = try Self.recordSegmented(in: dir)
        try #require(paths.count >= 3)
        let from: Int64 = 2_510_000_000, to: Int64 = 5_310_000_000
        let export = try SessionExport.plan(sources: paths.map { .init(path: $0, isLive: false) },
                                            request: .init(fromNanos: from, toNanos: to, labels: ["mic", "back"]))
        let out = dir.path + "/export.mp4"
        try Self.write(export, to: out)
        export.close()

        let origin = presentationOrigin(recording.expected)
        let allBack = recording.expected.first { $0.label == "back" }!.samples
        // The export starts with the picture on screen at `from` (the first chosen camera's).
        let onScreen = try #require(allBack.lastIndex { $0.pts - origin <= from })
        #expect(export.fromNanos == allBack[onScreen].pts - origin, "the export starts where that picture starts")
        #expect(from - export.fromNanos < 1_000_000_000 / 30, "and within one frame of from")
        #expect(export.toNanos == to)
        let start = export.fromNanos
        let back = Self.expectedSlice(recording.expected.first { $0.label == "back" }!, origin: origin, from: start, to: to)
        let mic = Self.expectedSlice(recording.expected.first { $0.label == "mic" }!, origin: origin, from: start, to: to)
        // Every packet (pts/dts within a tick, size, payload hash, keyframe flag), structure, ffmpeg -v error silent.
        let probe = try #require(assertOracles(file: out, expected: [back, mic], origin: origin + start))
        #expect(probe.streams.map { $0.handlerName ?? "?" }.sorted() == ["back", "mic"])
        #expect(export.tracks.map(\.label) == ["back", "mic"], "track order follows the session")

        // What plays: exactly the pictures shown from `from` until `to`, each once.
        let firstShown = onScreen
        let lastShown = try #require(allBack.lastIndex { $0.pts - origin < to })
        #expect(lastShown - firstShown + 1 == 85, "2.8 s at 30 fps, and the picture on screen at from")
        assertFrameCounters(file: out, probe: probe, track: back, count: lastShown - firstShown + 1, first: firstShown)
        // The first picture is shown within one frame of `from`, the last ends within one frame of `to`.
        let backStream = try #require(probe.stream(label: "back"))
        let shown = probe.packets(stream: backStream.index).compactMap(\.pts).filter { $0 >= 0 }
        let firstPTS = try #require(shown.min()), lastPTS = try #require(shown.max())
        #expect(firstPTS < 3000, "first picture at \(firstPTS) ticks after from")
        #expect(abs(lastPTS + 3000 - ticks(to - start, 90000)) <= 3000, "last picture ends at \(lastPTS + 3000), to is \(ticks(to - start, 90000))")
        // Sound is trimmed to the same range: what plays starts at `from` and ends within one packet of `to`.
        let micStream = try #require(probe.stream(label: "mic"))
        let micPackets = probe.packets(stream: micStream.index)
        let audioEnd = try #require(micPackets.last.flatMap { p in p.pts.map { $0 + (p.duration ?? 0) } })
        #expect(abs(audioEnd - ticks(to - start, 48000)) <= 960, "sound ends at \(audioEnd) ticks, to is \(ticks(to - start, 48000))")
        #expect(micPackets.contains { ($0.pts ?? 1) <= 0 && ($0.pts ?? 0) + ($0.duration ?? 0) > 0 }, "no packet covers from")
    }

    @Test("the whole session with every track equals the sum of the segments, and a live session exports its durable part")
    func wholeAndLive() throws {
        let dir = try TemporaryDirectory(prefix: "export-whole")
        let (recording, paths) = try Self.recordSegmented(in: dir)
        let whole = try SessionExport.plan(sources: paths.map { .init(path: $0, isLive: false) }, request: .init(fromNanos: 0, toNanos: nil, labels: nil))
        let out = dir.path + "/whole.mp4"
        try Self.write(whole, to: out)
        whole.close()
        assertOracles(file: out, expected: recording.expected, origin: presentationOrigin(recording.expected))
        let probe = try FFprobe.probe(out).result
        assertFrameCounters(file: out, probe: probe, track: recording.expected[1])

        // The same recording still running: the last file is fragmented, its tail not yet durable.
        let liveDir = try TemporaryDirectory(prefix: "export-live")
        let (_, livePaths) = try Self.recordSegmented(in: liveDir, finish: false)
        let live = try SessionExport.plan(sources: livePaths.enumerated().map { .init(path: $1, isLive: $0 == livePaths.count - 1) },
                                          request: .init(fromNanos: 0, toNanos: nil, labels: ["back"]))
        let liveOut = liveDir.path + "/live.mp4"
        try Self.write(live, to: liveOut)
        live.close()
        let inspection = try MP4Inspection.inspect(path: liveOut)
        let exported = try #require(inspection.tracks.first).sampleCount
        #expect(inspection.tracks.count == 1 && exported > 150 && exported < 210, "\(exported) of 210 pictures were durable")
        let decode = try ffmpegDecodeCheck(liveOut)
        #expect(decode.status == 0 && decode.stderr.isEmpty, "\(decode.stderr)")
        let liveProbe = try FFprobe.probe(liveOut).result
        assertFrameCounters(file: liveOut, probe: liveProbe, track: recording.expected[1], count: exported)
    }

    @Test("requests that cannot be met say why: unknown track, reversed range, a range after the end")
    func refusals() throws {
        let dir = try TemporaryDirectory(prefix: "export-bad")
        let (_, paths) = try Self.recordSegmented(in: dir)
        let sources = paths.map { SessionExport.Source(path: $0, isLive: false) }
        func refusal(_ request: SessionExport.Request) -> ExportError? {
            do { _ = try SessionExport.plan(sources: sources, request: request); return nil } catch { return error }
        }
        let unknown = refusal(.init(fromNanos: 0, toNanos: nil, labels: ["side"]))
        #expect(unknown?.code == .invalidRequest && unknown?.message.contains("front, back, mic") == true, "\(String(describing: unknown))")
        #expect(refusal(.init(fromNanos: 3_000_000_000, toNanos: 2_000_000_000, labels: nil))?.code == .invalidRequest)
        #expect(refusal(.init(fromNanos: -1, toNanos: nil, labels: nil))?.code == .invalidRequest)
        let late = refusal(.init(fromNanos: 60_000_000_000, toNanos: nil, labels: nil))
        #expect(late?.code == .emptyRange && late?.message.contains("end at 7.") == true, "\(String(describing: late))")
    }
}

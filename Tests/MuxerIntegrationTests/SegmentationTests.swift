import TestSupport
import Foundation
import Shared
import Testing

/// Scenario 8: `maxSegmentDuration` splits one session into several regular MP4s.
@Suite("Segmented recording")
struct SegmentationTests {
    @Test("2 s segments over 7 s of 2 cameras + mic: every file passes, together they hold every sample once")
    func segmentsByDuration() throws {
        let dir = try TemporaryDirectory(prefix: "segments")
        let recording = try MediaGenerator.generate([
            .video(.init(id: 1, label: "front", frames: 210)),
            .video(.init(id: 2, label: "back", frames: 210)),
            .audio(.init(id: 3, label: "mic", packets: 350)),
        ])
        let outcome = try record(recording, directory: dir.path) { $0.maxSegmentDuration = 2_000_000_000 }
        assertBookkeeping(outcome, recording: recording)
        let summary = try #require(outcome.summary)
        let segments = summary.segments
        try #require(segments.count >= 3, "only \(segments.count) segments")
        #expect(segments.map(\.index) == Array(0..<segments.count))
        #expect(segments.map { ($0.path as NSString).lastPathComponent } == (1...segments.count).map { String(format: "rec-%04d.mp4", $0) })
        #expect(dir.listing() == segments.map { ($0.path as NSString).lastPathComponent }, "files on disk: \(dir.listing())")
        #expect(segments.first?.startNanos == 0)
        // Segments completed while recording were reported as events too.
        let completedEvents = outcome.events.compactMap { if case let .segmentCompleted(s) = $0 { s } else { nil } }
        #expect(completedEvents.count >= segments.count - 1, "\(completedEvents.count) segmentCompleted events during append")
        #expect(completedEvents == Array(segments.prefix(completedEvents.count)))

        let sessionOrigin = presentationOrigin(recording.expected)
        var next = [Int](repeating: 0, count: recording.expected.count) // per track: first sample not yet placed
        var previousStart: Int64 = -1
        for segment in segments {
            let name = (segment.path as NSString).lastPathComponent
            let (probe, _) = try FFprobe.probe(segment.path)
            var slices: [ExpectedTrack] = []
            for (t, track) in recording.expected.enumerated() {
                let n = probe.stream(label: track.label).map { probe.packets(stream: $0.index).count } ?? 0
                let range = next[t]..<min(track.samples.count, next[t] + n)
                slices.append(track.slice(range))
                next[t] = range.upperBound
                if let summaryTrack = segment.tracks.first(where: { $0.trackID == track.id }) {
                    #expect(summaryTrack.sampleCount == n, "\(name) \(track.label): summary says \(summaryTrack.sampleCount), file has \(n)")
                }
                if track.isVideo, let first = slices[t].samples.first {
                    #expect(first.isKeyframe, "\(name) \(track.label) starts with sample \(first.index), not a keyframe")
                }
            }
            #expect(slices.allSatisfy { !$0.samples.isEmpty }, "\(name): some track is empty: \(slices.map(\.samples.count))")
            // The file's own time zero is its earliest PTS; startNanos puts it on the session timeline.
            let fileOrigin = presentationOrigin(slices)
            #expect(segment.startNanos == fileOrigin - sessionOrigin,
                    "\(name): startNanos \(segment.startNanos), earliest PTS is at \(fileOrigin - sessionOrigin) on the session timeline")
            #expect(segment.startNanos > previousStart)
            previousStart = segment.startNanos
            guard let checked = assertOracles(file: segment.path, expected: slices, origin: sessionOrigin + segment.startNanos) else { continue }
            for (t, slice) in slices.enumerated() where slice.isVideo {
                if let stream = checked.stream(label: slice.label) {
                    #expect(checked.packets(stream: stream.index).first?.isKeyframe == true, "\(name) \(slice.label): first packet not K")
                }
                assertFrameCounters(file: segment.path, probe: checked, track: slice, first: slices[t].samples.first?.index ?? 0)
            }
            // No segment runs much past the limit (the cut waits for the next 1 s keyframe).
            #expect(segment.durationNanos <= 3_100_000_000, "\(name) lasts \(segment.durationNanos) ns")
        }
        for (t, track) in recording.expected.enumerated() {
            #expect(next[t] == track.samples.count, "\(track.label): segments hold \(next[t]) of \(track.samples.count) samples")
        }
    }

    @Test("Size-limited segments (maxSegmentBytes) also split at keyframes and lose nothing")
    func segmentsBySize() throws {
        let dir = try TemporaryDirectory(prefix: "segbytes")
        let recording = try MediaGenerator.generate([
            .video(.init(id: 1, label: "front", frames: 150, keyframeInterval: 15)),
            .audio(.init(id: 2, label: "mic", packets: 250)),
        ])
        let total = recording.samples.reduce(0) { $0 + $1.mp4Size }
        let outcome = try record(recording, directory: dir.path) { $0.maxSegmentBytes = total / 4 }
        assertBookkeeping(outcome, recording: recording)
        let segments = try #require(outcome.summary?.segments)
        #expect(segments.count >= 3, "\(segments.count) segments for a limit of a quarter of the data")
        let sessionOrigin = presentationOrigin(recording.expected)
        var next = [0, 0]
        for segment in segments {
            let (probe, _) = try FFprobe.probe(segment.path)
            var slices: [ExpectedTrack] = []
            for (t, track) in recording.expected.enumerated() {
                let n = probe.stream(label: track.label).map { probe.packets(stream: $0.index).count } ?? 0
                slices.append(track.slice(next[t]..<min(track.samples.count, next[t] + n)))
                next[t] += n
            }
            #expect(slices[0].samples.first?.isKeyframe == true)
            assertOracles(file: segment.path, expected: slices, origin: sessionOrigin + segment.startNanos)
        }
        #expect(next == recording.expected.map(\.samples.count))
    }
}

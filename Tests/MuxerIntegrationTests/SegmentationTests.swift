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
        let recording = try MediaGenerator.twoCamerasAndAMic()
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

        try assertSegmentsHoldEverySampleOnce(segments.map(SegmentFacts.init), recording: recording)
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

    @Test("a resume right after a split, before the new file's first fragment, goes on from the file before it: every sample once, one timeline")
    func resumeBeforeTheNewFilesFirstFragment() throws {
        let dir = try TemporaryDirectory(prefix: "segresume")
        let recording = try MediaGenerator.twoCamerasAndAMic()
        let configuration = makeConfiguration(recording, directory: dir.path) { $0.maxSegmentDuration = 2_000_000_000 }
        let muxer = try MP4Muxer(configuration: configuration)
        try muxer.start()
        var acknowledged: UInt64 = 0
        var split = false
        for sample in recording.samples {
            for case let .fragmentDurable(report) in try muxer.append(sample.muxerSample()) { acknowledged = report.durableThroughSequence }
            // The split has opened the second file, and nothing is written into it yet.
            // No second file yet (the split has not come) reads as nil.
            let second = try? FileManager.default.attributesOfItem(atPath: configuration.path(forSegment: 1))[.size] as? Int
            // ftyp and the 16-byte placeholder only (under 100 bytes): no moov, no fragment.
            if let second, second < 100 { split = true; break }
        }
        try #require(split, "the recording never split")
        try #require(acknowledged > 0)
        muxer.suspend()  // the server stops here (kill -9 leaves the same files)

        let (resumed, report) = try MP4Muxer.resume(configuration: configuration)
        #expect(report.segmentIndex == 1 && report.samplesInFile == 0)
        #expect(report.durableThroughSequence == acknowledged, "the ack point is the first file's, not 0")
        // The agent sends everything after the ack point again; what the first file holds is not muxed twice.
        var refused: [MuxerEvent] = []
        for sample in recording.samples where sample.sequence > report.durableThroughSequence {
            refused += try resumed.append(sample.muxerSample()).filter { if case .sampleRejected = $0 { true } else { false } }
        }
        #expect(refused.isEmpty, "\(refused)")
        let later = try resumed.finish().segments
        #expect(later.first?.index == 1)
        let first = try MP4Inspection.inspect(path: configuration.path(forSegment: 0))
        let origin = try #require(first.recordingInfo).sessionOriginNanos
        for file in later {
            #expect(try MP4Inspection.inspect(path: file.path).recordingInfo?.sessionOriginNanos == origin, "\(file.path) names another time zero")
        }
        try assertSegmentsHoldEverySampleOnce([try SegmentFacts(inspecting: first)] + later.map(SegmentFacts.init), recording: recording)
    }

    /// What a check of one file of a segmented recording needs, from its summary or read back.
    private struct SegmentFacts {
        var path: String
        var startNanos: Int64
        var durationNanos: Int64
        var counts: [UInt32: Int]

        init(_ summary: SegmentSummary) {
            path = summary.path
            startNanos = summary.startNanos
            durationNanos = summary.durationNanos
            counts = Dictionary(uniqueKeysWithValues: summary.tracks.map { ($0.trackID, $0.sampleCount) })
        }

        init(inspecting file: MP4Inspection) throws {
            path = file.path
            startNanos = try #require(file.recordingInfo).segmentStartNanos
            durationNanos = Int64(file.durationSeconds * 1e9)
            counts = Dictionary(uniqueKeysWithValues: file.tracks.map { ($0.id, $0.sampleCount) })
        }
    }

    /// Every sample of `recording` in exactly one of `segments`, in order: each file passes
    /// the oracles, starts every video track at a keyframe, sits where its `startNanos` says
    /// on the session timeline, and lasts about its limit.
    private func assertSegmentsHoldEverySampleOnce(_ segments: [SegmentFacts], recording: GeneratedRecording) throws {
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
                if let count = segment.counts[track.id] {
                    #expect(count == n, "\(name) \(track.label): summary says \(count), file has \(n)")
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
}

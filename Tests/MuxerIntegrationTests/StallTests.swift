import TestSupport
import Foundation
import Shared
import Testing

/// Scenario 12: one track goes quiet while the others continue.
@Suite("Stalled tracks")
struct StallTests {
    static func stallEvents(_ events: [MuxerEvent], track: UInt32) -> [String] {
        events.compactMap { event in
            switch event {
            case let .trackStalled(id) where id == track: "stalled"
            case let .trackResumed(id) where id == track: "resumed"
            default: nil
            }
        }
    }

    /// While the mic is silent, video must not be held back for the whole outage: once the
    /// stall is declared (stallTimeout = 0.5 s of media time), fragments keep becoming durable.
    /// Checked in media time only: before the first post-outage audio packet is appended, a
    /// durable fragment must already hold "front" video from at least 0.9 s into the outage.
    /// (Not later: a frame becomes durable when its 1 s fragment is cut, and the stall is only
    /// declared 0.5 s into the outage, so 1.5 s in would need the fragment cut at the very
    /// instant audio returns.)
    static func assertVideoKeptFlowing(_ outcome: RecordingOutcome, recording: GeneratedRecording, outageStart: Int64, resume micIndex: Int,
                                       sourceLocation: SourceLocation = #_sourceLocation) {
        let mic = recording.expected.first { !$0.isVideo }!
        let resumeSequence = mic.samples[micIndex].sequence
        let front = recording.expected.first { $0.isVideo }!
        let probeFrame = front.samples.first { $0.pts - recording.clockBase >= outageStart + 900_000_000 }!
        let durableBeforeResume = outcome.eventsBySequence.filter { $0.sequence < resumeSequence }.compactMap { entry -> UInt64? in
            if case let .fragmentDurable(r) = entry.event { r.highestSequence } else { nil }
        }.max() ?? 0
        #expect(durableBeforeResume >= probeFrame.sequence,
                "during the 2 s outage video was held back: before audio resumed (sequence \(resumeSequence)), fragments were durable only up to sequence \(durableBeforeResume); front frame \(probeFrame.index) (0.9 s into the outage) is sequence \(probeFrame.sequence)",
                sourceLocation: sourceLocation)
    }

    @Test("Audio loses 2 s mid-recording: stalled once, resumed once, file complete")
    func audioGap() throws {
        let dir = try TemporaryDirectory(prefix: "stall-gap")
        let recording = try MediaGenerator.generate([
            .video(.init(id: 1, label: "front", frames: 180)),
            .video(.init(id: 2, label: "back", frames: 180)),
            .audio(.init(id: 3, label: "mic", packets: 300, gap: (at: 100, count: 100))),
        ])
        let outcome = try record(recording, directory: dir.path)
        assertBookkeeping(outcome, recording: recording)
        #expect(Self.stallEvents(outcome.events, track: 3) == ["stalled", "resumed"])
        #expect(Self.stallEvents(outcome.events, track: 1).isEmpty && Self.stallEvents(outcome.events, track: 2).isEmpty)
        #expect(outcome.summary?.stalledTracks == [3])
        Self.assertVideoKeptFlowing(outcome, recording: recording, outageStart: 2_000_000_000, resume: 100)
        let probe = try #require(assertOracles(file: outcome.path, expected: recording.expected))
        assertFrameCounters(file: outcome.path, probe: probe, track: recording.expected[1])
    }

    @Test("Audio delivered 2 s late in a burst (timestamps continuous): stalled once, resumed once, file complete")
    func audioLateBurst() throws {
        let dir = try TemporaryDirectory(prefix: "stall-late")
        let recording = try MediaGenerator.generate([
            .video(.init(id: 1, label: "front", frames: 180)),
            .audio(.init(id: 3, label: "mic", packets: 300, late: (at: 100, count: 100))),
        ])
        let outcome = try record(recording, directory: dir.path)
        assertBookkeeping(outcome, recording: recording)
        #expect(Self.stallEvents(outcome.events, track: 3) == ["stalled", "resumed"])
        #expect(outcome.summary?.stalledTracks == [3])
        Self.assertVideoKeptFlowing(outcome, recording: recording, outageStart: 2_000_000_000, resume: 100)
        assertOracles(file: outcome.path, expected: recording.expected)
    }
}

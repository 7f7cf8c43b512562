import Foundation
import Shared
import Testing

/// The file bytes right after a fragment was reported durable (what a crash at that moment,
/// or any later moment before the next write, leaves on disk).
struct FileSnapshot {
    var report: FragmentReport
    var bytes: Data
}

/// What feeding a generated recording to a muxer produced.
struct RecordingOutcome {
    var muxer: MP4Muxer
    var configuration: MuxerConfiguration
    var events: [MuxerEvent] = []
    /// Each event with the sequence of the append that returned it.
    var eventsBySequence: [(sequence: UInt64, event: MuxerEvent)] = []
    var snapshots: [FileSnapshot] = []
    var summary: RecordingSummary?

    var fragmentReports: [FragmentReport] {
        events.compactMap { if case let .fragmentDurable(r) = $0 { r } else { nil } }
    }
    var rejections: [MuxerEvent] {
        events.filter { if case .sampleRejected = $0 { true } else { false } }
    }
    var path: String { configuration.directory + "/" + configuration.baseName + ".mp4" }
}

func makeConfiguration(_ recording: GeneratedRecording, directory: String, baseName: String = "rec",
                       configure: (inout MuxerConfiguration) -> Void = { _ in }) -> MuxerConfiguration {
    var configuration = MuxerConfiguration(tracks: recording.tracks, directory: directory, baseName: baseName,
                                           creationTime: 1_700_000_000)
    configuration.durability = .none // tmpfs-friendly; crash semantics are simulated by copying bytes
    configure(&configuration)
    return configuration
}

/// Appends `samples` (default: all of the recording, in sequence order), collecting events;
/// optionally snapshots the (unsegmented) file after each durable fragment; finishes unless told not to.
func record(_ recording: GeneratedRecording, directory: String, baseName: String = "rec",
            samples: [InputSample]? = nil, snapshots: Bool = false, finish: Bool = true,
            configure: (inout MuxerConfiguration) -> Void = { _ in }) throws -> RecordingOutcome {
    let configuration = makeConfiguration(recording, directory: directory, baseName: baseName, configure: configure)
    let muxer = try MP4Muxer(configuration: configuration)
    try muxer.start()
    var outcome = RecordingOutcome(muxer: muxer, configuration: configuration)
    for sample in samples ?? recording.samples {
        let events = try muxer.append(sample.muxerSample())
        outcome.events += events
        outcome.eventsBySequence += events.map { (sample.sequence, $0) }
        if snapshots {
            for case let .fragmentDurable(report) in events {
                outcome.snapshots.append(FileSnapshot(report: report, bytes: try Data(contentsOf: URL(fileURLWithPath: outcome.path))))
            }
        }
    }
    if finish {
        let summary = try muxer.finish()
        outcome.summary = summary
        #expect(muxer.status == .completed)
    }
    return outcome
}

/// Bookkeeping every finished recording must satisfy: each appended sample reported durable
/// exactly once, per-track sample counts in the summary, the ack point at the last sequence.
func assertBookkeeping(_ outcome: RecordingOutcome, recording: GeneratedRecording, samples: [InputSample]? = nil,
                       sourceLocation: SourceLocation = #_sourceLocation) {
    let sent = samples ?? recording.samples
    // finish() returns a summary, not events: the fragments it flushes are not reported, so
    // the reports seen during append cover at most what was sent.
    let durable = outcome.fragmentReports.reduce(0) { $0 + $1.sampleCount }
    #expect(durable <= sent.count, "fragment reports cover \(durable) samples, only \(sent.count) were appended", sourceLocation: sourceLocation)
    if let summary = outcome.summary {
        let total = summary.segments.flatMap(\.tracks).reduce(0) { $0 + $1.sampleCount }
        #expect(total == sent.count, "summary holds \(total) samples, \(sent.count) were appended", sourceLocation: sourceLocation)
    }
    #expect(outcome.rejections.isEmpty, "unexpected rejections: \(outcome.rejections)", sourceLocation: sourceLocation)
    if let last = sent.last?.sequence {
        #expect(outcome.muxer.durableThroughSequence == last, "durable through \(outcome.muxer.durableThroughSequence), last sequence \(last)",
                sourceLocation: sourceLocation)
    }
    guard let summary = outcome.summary else { return }
    for track in recording.tracks {
        let count = summary.segments.flatMap(\.tracks).filter { $0.trackID == track.id }.reduce(0) { $0 + $1.sampleCount }
        let expected = sent.filter { $0.trackID == track.id }.count
        #expect(count == expected, "summary: track \(track.label) has \(count) samples, \(expected) appended", sourceLocation: sourceLocation)
    }
}

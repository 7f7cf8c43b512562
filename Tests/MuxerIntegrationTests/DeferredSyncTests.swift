import Foundation
import Shared
import Testing
import TestSupport

/// `.fsyncWhenAsked`, the server's durability: the muxer writes each fragment as it closes and
/// reports it durable only when its owner has run ``MP4Muxer/syncWrittenFragments()`` (on a
/// thread that may block), which also finalizes the files a split closed.
@Suite("Fragments synced when the owner asks")
struct DeferredSyncTests {
    private static func configuration(_ recording: GeneratedRecording, directory: String, durability: MuxerConfiguration.Durability,
                                      segmentNanos: Int64? = 2_000_000_000) -> MuxerConfiguration {
        makeConfiguration(recording, directory: directory) {
            $0.durability = durability
            $0.maxSegmentDuration = segmentNanos
        }
    }

    /// The events without what differs from run to run: the fragments' timings, the directory.
    private static func comparable(_ events: [MuxerEvent]) -> [MuxerEvent] {
        events.map { event in
            switch event {
            case .fragmentDurable(var report):
                report.writeDuration = .zero
                report.syncDuration = .zero
                return .fragmentDurable(report)
            case .segmentCompleted(var summary):
                summary.path = (summary.path as NSString).lastPathComponent
                return .segmentCompleted(summary)
            default:
                return event
            }
        }
    }

    @Test("The ack point waits for the sync; then every report, ack point and file is what fsyncEveryFragment gives")
    func syncAfterEveryAppendMatchesFsyncEveryFragment() throws {
        let recording = try MediaGenerator.twoCamerasAndAMic()
        let inline = try TemporaryDirectory(prefix: "sync-inline")
        let asked = try TemporaryDirectory(prefix: "sync-asked")

        let reference = try MP4Muxer(configuration: Self.configuration(recording, directory: inline.path, durability: .fsyncEveryFragment))
        try reference.start()
        var referenceEvents: [MuxerEvent] = []
        for sample in recording.samples { referenceEvents += try reference.append(sample.muxerSample()) }
        let referenceSummary = try reference.finish()
        referenceEvents += referenceSummary.events

        let muxer = try MP4Muxer(configuration: Self.configuration(recording, directory: asked.path, durability: .fsyncWhenAsked))
        try muxer.start()
        var events: [MuxerEvent] = []
        var syncs = 0
        for sample in recording.samples {
            let before = muxer.durableThroughSequence
            let appended = try muxer.append(sample.muxerSample())
            let reported = appended.filter { if case .fragmentDurable = $0 { true } else if case .segmentCompleted = $0 { true } else { false } }
            #expect(reported.isEmpty, "append reported \(reported) before any sync")
            #expect(muxer.durableThroughSequence == before, "the ack point moved without a sync")
            events += appended
            if muxer.hasUnsyncedFragments {
                events += try muxer.syncWrittenFragments()
                syncs += 1
                #expect(!muxer.hasUnsyncedFragments)
            }
        }
        let summary = try muxer.finish()
        events += summary.events

        // Seven 1 s fragments: six close during the appends, the last one in finish().
        #expect(syncs == 6, "\(syncs) syncs")
        #expect(Self.comparable(events) == Self.comparable(referenceEvents))
        #expect(Self.comparable(summary.segments.map(MuxerEvent.segmentCompleted))
                == Self.comparable(referenceSummary.segments.map(MuxerEvent.segmentCompleted)))
        #expect(summary.segments.count >= 3, "\(summary.segments.count) files")
        for (ours, theirs) in zip(summary.segments, referenceSummary.segments) {
            let same = try Data(contentsOf: URL(fileURLWithPath: ours.path)) == Data(contentsOf: URL(fileURLWithPath: theirs.path))
            #expect(same, "\(ours.path) differs from the file fsyncEveryFragment wrote")
        }
    }

    @Test("A file a split closed is finalized by the sync, not by the append that split")
    func splitFileIsFinalizedAtTheSync() throws {
        let recording = try MediaGenerator.twoCamerasAndAMic()
        let dir = try TemporaryDirectory(prefix: "sync-split")
        let muxer = try MP4Muxer(configuration: Self.configuration(recording, directory: dir.path, durability: .fsyncWhenAsked))
        try muxer.start()
        var splitSeen = false
        for sample in recording.samples {
            let appended = try muxer.append(sample.muxerSample())
            #expect(!appended.contains { if case .segmentCompleted = $0 { true } else { false } })
            // The second file exists: the first is closed and waits for the sync.
            if !splitSeen, FileManager.default.fileExists(atPath: dir.path + "/rec-0002.mp4") {
                splitSeen = true
                let first = dir.path + "/rec-0001.mp4"
                #expect(try MP4FileScanner.scan(path: first).isProgressive == false, "finalized before the sync")
                let synced = try muxer.syncWrittenFragments()
                let completed = synced.compactMap { if case let .segmentCompleted(s) = $0 { s } else { nil } }
                #expect(completed.map(\.index) == [0])
                #expect(try MP4FileScanner.scan(path: first).isProgressive, "not finalized by the sync")
                #expect(try ffmpegDecodeCheck(first).status == 0)
            } else if muxer.hasUnsyncedFragments {
                _ = try muxer.syncWrittenFragments()
            }
        }
        #expect(splitSeen)
        let summary = try muxer.finish()
        #expect(summary.segments.map(\.index) == Array(0..<summary.segments.count))
    }

    @Test("Suspended with fragments written and never synced, the resume keeps them and the file holds every sample once")
    func suspendWithUnsyncedFragmentsResumes() throws {
        let recording = try MediaGenerator.twoCamerasAndAMic()
        let dir = try TemporaryDirectory(prefix: "sync-suspend")
        let configuration = Self.configuration(recording, directory: dir.path, durability: .fsyncWhenAsked, segmentNanos: nil)
        let muxer = try MP4Muxer(configuration: configuration)
        try muxer.start()
        let half = recording.samples.count / 2
        var written: [FragmentReport] = []
        for sample in recording.samples[..<half] { _ = try muxer.append(sample.muxerSample()) }
        #expect(muxer.hasUnsyncedFragments)
        #expect(muxer.durableThroughSequence == 0, "nothing was synced, nothing is acknowledged")
        muxer.suspend()

        let (resumed, report) = try MP4Muxer.resume(configuration: configuration)
        #expect(report.durableThroughSequence > 0, "the written fragments are in the file")
        #expect(report.durableThroughSequence < UInt64(half), "samples still queued for interleaving were never written")
        // The agent resends everything after the ack point it is told.
        for sample in recording.samples where sample.sequence > report.durableThroughSequence {
            let events = try resumed.append(sample.muxerSample())
            #expect(!events.contains { if case .duplicateIgnored = $0 { true } else { false } })
            if resumed.hasUnsyncedFragments {
                for case let .fragmentDurable(fragment) in try resumed.syncWrittenFragments() { written.append(fragment) }
            }
        }
        _ = try resumed.finish()
        #expect(zip(written, written.dropFirst()).allSatisfy { $0.durableThroughSequence < $1.durableThroughSequence })
        assertOracles(file: configuration.path(forSegment: 0), expected: recording.expected)
    }
}

import Foundation
import Shared
import Testing
import TestSupport

/// A recording from several senders (a session across agents): each sender numbers its samples
/// in its own lane (``SequenceLane``), and each lane has its own ack point, in the reports, in
/// the fragments' markers and after a resume from the file.
@Suite("Sequence lanes")
struct SequenceLaneTests {
    /// The recording's samples in arrival order, each track numbered in a lane of its own.
    private static func laned(_ recording: GeneratedRecording) throws -> [(sample: InputSample, sequence: UInt64)] {
        let lanes = Dictionary(uniqueKeysWithValues: recording.expected.enumerated().map { ($1.id, UInt16($0)) })
        var next: [UInt16: UInt64] = [:]
        return try recording.samples.map { sample in
            let lane = try #require(lanes[sample.trackID])
            next[lane, default: 0] += 1
            return (sample, try #require(SequenceLane.compose(lane: lane, local: next[lane]!)))
        }
    }

    @Test("Three senders in three lanes: each lane's ack point, a resume from the file per lane, every sample once")
    func threeLanesSuspendAndResume() throws {
        let recording = try MediaGenerator.twoCamerasAndAMic()
        let dir = try TemporaryDirectory(prefix: "lanes")
        let configuration = makeConfiguration(recording, directory: dir.path) { $0.durability = .fsyncWhenAsked }
        let samples = try Self.laned(recording)
        let muxer = try MP4Muxer(configuration: configuration)
        try muxer.start()
        let half = samples.count / 2
        var reports: [FragmentReport] = []
        for (sample, sequence) in samples[..<half] {
            _ = try muxer.append(sample.muxerSample(sequence: sequence))
            for case let .fragmentDurable(report) in try muxer.syncWrittenFragments() { reports.append(report) }
        }
        let before = muxer.durablePoints
        #expect(before.byLane.count == 3, "every sender has durable samples: \(before)")
        #expect(before.lane0 == muxer.durableThroughSequence)
        for lane: UInt16 in 0...2 {
            #expect(SequenceLane.lane(of: before[lane]) == lane)
            let appended = samples[..<half].filter { SequenceLane.lane(of: $0.sequence) == lane }.map(\.sequence)
            #expect(before[lane] <= appended.max()!, "a lane's point is one of its own sequences")
        }
        // Each report's points only grow, lane by lane.
        for (a, b) in zip(reports, reports.dropFirst()) {
            #expect((0...2).allSatisfy { a.durable[UInt16($0)] <= b.durable[UInt16($0)] })
        }
        // More samples written but not synced, then a clean stop (as a restart does).
        for (sample, sequence) in samples[half..<(half + 40)] { _ = try muxer.append(sample.muxerSample(sequence: sequence)) }
        muxer.suspend()

        let (resumed, report) = try MP4Muxer.resume(configuration: configuration)
        for lane: UInt16 in 0...2 { #expect(report.durable[lane] >= before[lane], "lane \(lane) keeps what was durable") }
        var duplicates = 0, resent = 0
        // Each sender resends everything after its own lane's point.
        for (sample, sequence) in samples where sequence > report.durable[SequenceLane.lane(of: sequence)] {
            resent += 1
            let events = try resumed.append(sample.muxerSample(sequence: sequence))
            duplicates += events.filter { if case .duplicateIgnored = $0 { true } else { false } }.count
            _ = try resumed.syncWrittenFragments()
        }
        _ = try resumed.finish()
        #expect(resumed.durablePoints.byLane.count == 3)
        for lane: UInt16 in 0...2 {
            #expect(resumed.durablePoints[lane] == samples.filter { SequenceLane.lane(of: $0.sequence) == lane }.map(\.sequence).max())
        }
        // What the file held above a lane's point was recognized and not muxed again: exactly
        // the resent samples the file already had.
        #expect(duplicates == resent - (samples.count - report.samplesInFile))
        assertOracles(file: configuration.path(forSegment: 0), expected: recording.expected)
    }

    @Test("A marker with lanes round-trips; a marker of one lane is byte for byte the old layout")
    func markerRoundTrip() throws {
        let b7 = try #require(SequenceLane.compose(lane: 1, local: 7))
        let c3 = try #require(SequenceLane.compose(lane: 9, local: 3))
        let marker = SequenceMarkerBox(durable: DurablePoints(lane0: 4, others: [1: b7, 9: c3]), sequences: [5, 6, b7 + 1, c3])
        var bytes = ByteReader(marker.encoded())
        _ = try bytes.u32("size")
        _ = try bytes.fourCC()
        let read = try #require(try SequenceMarkerBox(freePayload: &bytes))
        #expect(read == marker)
        #expect(read.durable[1] == b7 && read.durable[9] == c3 && read.durableThrough == 4)

        let single = SequenceMarkerBox(durableThrough: 4, sequences: [5, 6])
        #expect(single.encoded().count == 8 + 4 + 8 + 4 + 12, "no lane tail for one sender")
    }
}

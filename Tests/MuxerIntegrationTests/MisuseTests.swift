import TestSupport
import Foundation
import MediaEncoding
import Shared
import Testing

/// Scenarios 10 and 11: misuse is refused with the right code and costs nothing already
/// accepted; cancel deletes; I/O failures surface as `.io`.
@Suite("Misuse, cancel and I/O failures")
struct MisuseTests {
    @Test("Each misuse throws its code, the recording continues, and the file holds exactly the accepted samples")
    func misuseKeepsRecording() throws {
        let dir = try TemporaryDirectory(prefix: "misuse")
        let recording = try MediaGenerator.generate([
            .video(.init(id: 1, label: "front", frames: 60)),
            .video(.init(id: 2, label: "back", frames: 60)),
            .audio(.init(id: 3, label: "mic", packets: 100)),
        ])
        // A keyframe from a 640x480 encoder: its in-band SPS describes another resolution.
        let bigSpec = VideoSpec(id: 1, label: "front", width: 640, height: 480, frames: 1)
        let bigEncoder = try MediaGenerator.videoEncoder(bigSpec)
        let bigPattern = TestPatternVideo(width: 640, height: 480, fps: 30)
        var bigFrames: [EncodedVideoFrame] = []
        for i in 0..<3 { bigFrames += try bigEncoder.encode(bigPattern.frame(index: i), pts: Int64(i) * 33_333_333) }
        bigFrames += try bigEncoder.flush()
        let bigKeyframe = try #require(bigFrames.first { $0.isKeyframe })
        try #require(MediaGenerator.mp4Form(annexB: bigKeyframe.data).count < bigKeyframe.data.count, "no in-band parameter sets")

        let configuration = makeConfiguration(recording, directory: dir.path) { $0.maxSampleSize = 256 << 10 }
        let muxer = try MP4Muxer(configuration: configuration)
        try muxer.start()
        let micEndsAt = recording.samples.firstIndex { $0.trackID == 3 && $0.index == 70 }!
        var accepted: [InputSample] = []
        var lastByTrack: [UInt32: InputSample] = [:]
        for (i, sample) in recording.samples.enumerated() {
            if i == micEndsAt { _ = try muxer.endTrack(3) }
            if i >= micEndsAt, sample.trackID == 3 {
                expectMuxerError(.trackEnded, "append to an ended track") { () throws(MuxerError) in try muxer.append(sample.muxerSample()) }
                continue
            }
            let seq = sample.sequence
            switch i {
            case 25:
                var s = sample.muxerSample()
                s.trackID = 99
                expectMuxerError(.unknownTrack, "unknown track") { () throws(MuxerError) in try muxer.append(s) }
                expectMuxerError(.unknownTrack, "endTrack of an unknown track") { () throws(MuxerError) in try muxer.endTrack(99) }
            case 40:
                if let last = lastByTrack[sample.trackID] {
                    var same = last.muxerSample(sequence: seq) // DTS equal to the previous one
                    expectMuxerError(.decodeTimeWentBackwards, "repeated DTS") { () throws(MuxerError) in try muxer.append(same) }
                    same.dts -= 1_000_000
                    same.pts -= 1_000_000
                    expectMuxerError(.decodeTimeWentBackwards, "DTS going backwards") { () throws(MuxerError) in try muxer.append(same) }
                }
            case 55:
                var big = sample.muxerSample()
                big.data = [UInt8](repeating: 0xFC, count: (256 << 10) + 1)
                expectMuxerError(.sampleTooLarge, "oversized sample") { () throws(MuxerError) in try muxer.append(big) }
                var empty = sample.muxerSample()
                empty.data = []
                expectMuxerError(.emptySample, "empty sample") { () throws(MuxerError) in try muxer.append(empty) }
            case 70:
                // A reused sequence number is a resend: acknowledged, never written twice.
                let resend = recording.samples[i - 1].muxerSample()
                #expect(try muxer.append(resend) == [.duplicateIgnored(trackID: resend.trackID, sequence: resend.sequence)])
            case 85:
                var early = sample.muxerSample()
                early.pts = early.dts - 1
                expectMuxerError(.presentationBeforeDecode, "PTS before DTS") { () throws(MuxerError) in try muxer.append(early) }
            default:
                break
            }
            if i == 100 {
                // The codec change: on the next "front" sample's timestamps, a 640x480 keyframe.
                let next = recording.samples[i...].first { $0.trackID == 1 }!
                let change = MuxerSample(trackID: 1, sequence: seq, pts: next.pts, dts: next.dts, duration: next.duration,
                                         isKeyframe: true, data: bigKeyframe.data)
                expectMuxerError(.codecConfigurationChanged, "in-band SPS of another resolution") { () throws(MuxerError) in try muxer.append(change) }
            }
            #expect(muxer.status == .running, "misuse at \(i) stopped the muxer: \(muxer.status)")
            _ = try muxer.append(sample.muxerSample())
            accepted.append(sample)
            lastByTrack[sample.trackID] = sample
        }
        let summary = try muxer.finish()
        #expect(muxer.status == .completed)
        #expect(summary.segments.flatMap(\.tracks).reduce(0) { $0 + $1.sampleCount } == accepted.count)
        // After finish: everything is refused with notRunning.
        let late = recording.samples.last!.muxerSample(sequence: 1_000_000)
        expectMuxerError(.notRunning, "append after finish") { () throws(MuxerError) in try muxer.append(late) }
        expectMuxerError(.notRunning, "endTrack after finish") { () throws(MuxerError) in try muxer.endTrack(1) }
        expectMuxerError(.notRunning, "finish twice") { () throws(MuxerError) in try muxer.finish() }
        expectMuxerError(.notRunning, "start after finish") { () throws(MuxerError) in try muxer.start() }

        let expected = recording.expected.map { track in
            track.slice(0..<accepted.filter { $0.trackID == track.id }.count)
        }
        #expect(expected[2].samples.count == 70)
        let path = dir.file("rec.mp4")
        let probe = try #require(assertOracles(file: path, expected: expected))
        #expect(probe.packets.count == accepted.count)
        assertFrameCounters(file: path, probe: probe, track: expected[0])
    }

    @Test("Invalid configurations are refused up front")
    func invalidConfiguration() throws {
        let dir = try TemporaryDirectory(prefix: "badconfig")
        let recording = try MediaGenerator.generate([.video(.init(id: 1, label: "front", frames: 1))])
        var config = makeConfiguration(recording, directory: dir.path)
        config.tracks = []
        expectMuxerError(.invalidConfiguration, "no tracks") { () throws(MuxerError) in try MP4Muxer(configuration: config) }
        config = makeConfiguration(recording, directory: dir.path)
        config.tracks.append(config.tracks[0])
        expectMuxerError(.invalidConfiguration, "duplicate ids") { () throws(MuxerError) in try MP4Muxer(configuration: config) }
        config = makeConfiguration(recording, directory: dir.path)
        config.tracks[0].rotation = 45
        expectMuxerError(.invalidConfiguration, "rotation 45") { () throws(MuxerError) in try MP4Muxer(configuration: config) }
        config = makeConfiguration(recording, directory: dir.path)
        config.tracks[0].id = 0
        expectMuxerError(.invalidConfiguration, "track id 0") { () throws(MuxerError) in try MP4Muxer(configuration: config) }
        config = makeConfiguration(recording, directory: dir.path)
        config.tracks[0].codec = .h264(sps: [0x68, 1, 2], pps: [0x68, 1])
        expectMuxerError(.invalidConfiguration, "garbage SPS") { () throws(MuxerError) in try MP4Muxer(configuration: config) }
        #expect(dir.listing().isEmpty, "a refused configuration created files: \(dir.listing())")
    }

    @Test("cancel() deletes the in-progress file, and every segment of a segmented recording")
    func cancelDeletesFiles() throws {
        let recording = try MediaGenerator.generate([
            .video(.init(id: 1, label: "front", frames: 105, keyframeInterval: 15)),
            .audio(.init(id: 2, label: "mic", packets: 175)),
        ])
        for segmented in [false, true] {
            let dir = try TemporaryDirectory(prefix: "cancel")
            let outcome = try record(recording, directory: dir.path, finish: false) {
                if segmented { $0.maxSegmentDuration = 1_000_000_000 }
            }
            #expect(!outcome.fragmentReports.isEmpty)
            let before = dir.listing()
            #expect(segmented ? before.count >= 2 : before == ["rec.mp4"], "files before cancel: \(before)")
            outcome.muxer.cancel()
            #expect(outcome.muxer.status == .cancelled)
            #expect(dir.listing().isEmpty, "cancel left \(dir.listing())")
            expectMuxerError(.notRunning, "append after cancel") { () throws(MuxerError) in
                try outcome.muxer.append(recording.samples.last!.muxerSample(sequence: 1_000_000))
            }
            expectMuxerError(.notRunning, "finish after cancel") { () throws(MuxerError) in try outcome.muxer.finish() }
        }
        // Cancel before anything was appended, and finish with nothing appended.
        let dir = try TemporaryDirectory(prefix: "cancel-empty")
        let muxer = try MP4Muxer(configuration: makeConfiguration(recording, directory: dir.path))
        try muxer.start()
        #expect(dir.listing() == ["rec.mp4"])
        muxer.cancel()
        #expect(dir.listing().isEmpty)
        let empty = try MP4Muxer(configuration: makeConfiguration(recording, directory: dir.path, baseName: "empty"))
        try empty.start()
        let summary = try empty.finish()
        #expect(summary.segments.isEmpty, "a recording with no samples produced \(summary.segments.map(\.path))")
        #expect(dir.listing().isEmpty, "an empty recording left \(dir.listing())")
    }

    @Test("start() in a missing directory, or over an existing file, throws .io and touches nothing")
    func ioFailures() throws {
        let recording = try MediaGenerator.generate([.video(.init(id: 1, label: "front", frames: 1))])
        let dir = try TemporaryDirectory(prefix: "io")
        let missing = try MP4Muxer(configuration: makeConfiguration(recording, directory: dir.file("does/not/exist")))
        let error = expectMuxerError(.io, "missing directory") { () throws(MuxerError) in try missing.start() }
        #expect(error?.errno == ENOENT, "errno \(error?.errno ?? -1)")
        #expect(missing.status != .running)

        let existing = dir.file("rec.mp4")
        try Data("precious".utf8).write(to: URL(fileURLWithPath: existing))
        let clobber = try MP4Muxer(configuration: makeConfiguration(recording, directory: dir.path))
        let exists = expectMuxerError(.io, "existing file") { () throws(MuxerError) in try clobber.start() }
        #expect(exists?.errno == EEXIST, "errno \(exists?.errno ?? -1)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: existing)) == Data("precious".utf8), "an existing file was overwritten")
    }
}

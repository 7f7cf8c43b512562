import TestSupport
import Foundation
@testable import MP4
import Testing

/// A one-video-track recording into a fresh temporary directory (tmpfs-like: no fsync).
private final class Recording {
    let directory: String
    let configuration: MuxerConfiguration
    let muxer: MP4Muxer

    init(audio: Bool = false, edit: (inout MuxerConfiguration) -> Void = { _ in }) throws {
        directory = NSTemporaryDirectory() + "timestamp-safety-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var tracks = [TrackConfiguration(id: 1, label: "front", codec: .h264(sps: X264.sps720p, pps: X264.pps720p))]
        if audio { tracks.append(TrackConfiguration(id: 2, label: "mic", codec: .opus(OpusHead(channelCount: 2, preSkip: 312)))) }
        var c = MuxerConfiguration(tracks: tracks, directory: directory, baseName: "r", creationTime: 1_700_000_000)
        c.durability = .none
        edit(&c)
        configuration = c
        muxer = try MP4Muxer(configuration: c)
        try muxer.start()
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    /// A keyframe of track 1 (or an Opus packet of track 2).
    @discardableResult
    func append(_ sequence: UInt64, pts: Int64, dts: Int64, duration: Int64 = 0, track: UInt32 = 1) throws(MuxerError) -> [MuxerEvent] {
        try muxer.append(MuxerSample(trackID: track, sequence: sequence, pts: pts, dts: dts, duration: duration, isKeyframe: true,
                                     data: track == 1 ? lengthPrefixed([idrSlice(24)]) : [0xFC, 0xFF, 0xFE]))
    }

    /// Finishes and returns the samples per track the file holds, read back.
    func finishAndCount() throws -> [Int] {
        let summary = try muxer.finish()
        let file = try #require(summary.segments.first)
        return try MP4Inspection.inspect(path: file.path).tracks.map(\.sampleCount)
    }
}

private let second: Int64 = 1_000_000_000
private let now: Int64 = 1_000 * second

@Suite("The muxer refuses timestamps it cannot represent, and never traps (issue 14)")
struct TimestampSafetyTests {
    // The three inputs that trapped the server on the old code. Each is the first sample of its
    // track, as it was in the report, so that nothing earlier refuses it for another reason.

    @Test("pts = dts = Int64.min + 1e9: refused; the recording goes on")
    func minimalTimes() throws {
        let r = try Recording()
        expectMuxerError(.timestampOutOfRange) { try r.append(1, pts: .min + second, dts: .min + second) }
        for seq in UInt64(2)...4 { try r.append(seq, pts: now + Int64(seq) * 33_000_000, dts: now + Int64(seq) * 33_000_000) }
        #expect(try r.finishAndCount() == [3])
    }

    @Test("dts = Int64.min + 1e9 with pts = now (trapped in SegmentWriter's fragment flush): refused")
    func decodeTimeFarBeforePresentation() throws {
        let r = try Recording()
        expectMuxerError(.timestampOutOfRange) { try r.append(1, pts: now, dts: .min + second) }
        try r.append(2, pts: now, dts: now)
        #expect(try r.finishAndCount() == [1])
    }

    @Test("pts = Int64.max, dts = Int64.min, then close (trapped in SegmentWriter's init segment): refused")
    func extremesThenClose() throws {
        let r = try Recording()
        expectMuxerError(.timestampOutOfRange) { try r.append(1, pts: .max, dts: .min) }
        // Closing a recording that holds nothing leaves no file, and does not trap.
        let summary = try r.muxer.finish()
        #expect(summary.segments.isEmpty)
    }

    @Test("pts = 2^62, dts = -2^62: each within the magnitude bound, their difference is not (found by the session fuzzer)")
    func differenceOverflow() throws {
        let limit = MuxerTimestampBounds.timestampMagnitude
        let r = try Recording()
        expectMuxerError(.timestampOutOfRange) { try r.append(1, pts: limit, dts: -limit) }
        expectMuxerError(.timestampOutOfRange) { try r.append(1, pts: .max, dts: .min) }
        try r.append(1, pts: now, dts: now)
        #expect(try r.finishAndCount() == [1])
    }

    @Test("every bound is enforced with timestampOutOfRange, and the value at each bound is accepted")
    func bounds() throws {
        let limit = MuxerTimestampBounds.timestampMagnitude
        let r = try Recording(audio: true)
        try r.append(1, pts: now, dts: now)
        // pts - dts
        try r.append(2, pts: now + 1 + MuxerTimestampBounds.maxPresentationDelay, dts: now + 1)
        expectMuxerError(.timestampOutOfRange) { try r.append(3, pts: now + 3 + MuxerTimestampBounds.maxPresentationDelay, dts: now + 2) }
        // duration
        try r.append(3, pts: now + 3, dts: now + 3, duration: MuxerTimestampBounds.maxDuration)
        expectMuxerError(.timestampOutOfRange) { try r.append(4, pts: now + 4, dts: now + 4, duration: MuxerTimestampBounds.maxDuration + 1) }
        // distance from the first dts
        let far = now + MuxerTimestampBounds.maxRecordingSpan
        try r.append(4, pts: far, dts: far)
        expectMuxerError(.timestampOutOfRange) { try r.append(5, pts: far + 1, dts: far + 1) }
        expectMuxerError(.timestampOutOfRange) { try r.append(5, pts: now - MuxerTimestampBounds.maxRecordingSpan - 1,
                                                              dts: now - MuxerTimestampBounds.maxRecordingSpan - 1, track: 2) }
        // magnitude
        expectMuxerError(.timestampOutOfRange) { try r.append(5, pts: limit + 1, dts: now + 5, track: 2) }
        expectMuxerError(.timestampOutOfRange) { try r.append(5, pts: now + 5, dts: -limit - 1, track: 2) }
        try r.append(5, pts: now + 5, dts: now + 5, track: 2)
        #expect(try r.finishAndCount() == [4, 1])
    }

    @Test("a recording may start anywhere within ±2^62 ns, negative times included")
    func magnitudeBound() throws {
        let limit = MuxerTimestampBounds.timestampMagnitude
        let low = try Recording()
        try low.append(1, pts: -limit, dts: -limit)
        try low.append(2, pts: -limit + second, dts: -limit + second)
        #expect(try low.finishAndCount() == [2])
        let high = try Recording()
        try high.append(1, pts: limit - second, dts: limit - second)
        try high.append(2, pts: limit, dts: limit)
        #expect(try high.finishAndCount() == [2])
    }

    @Test("the span reference survives a resume: the reopened file's decode origin")
    func spanAfterResume() throws {
        let r = try Recording { $0.fragmentDuration = 1 }
        try r.append(1, pts: now, dts: now)
        try r.append(2, pts: now + second, dts: now + second) // cuts the first fragment: durable
        r.muxer.suspend()
        let (resumed, report) = try MP4Muxer.resume(configuration: r.configuration)
        #expect(report.durableThroughSequence == 1)
        let origin = now - r.configuration.stallTimeout
        expectMuxerError(.timestampOutOfRange) {
            try resumed.append(MuxerSample(trackID: 1, sequence: 2, pts: origin + MuxerTimestampBounds.maxRecordingSpan + 1,
                                           dts: origin + MuxerTimestampBounds.maxRecordingSpan + 1, isKeyframe: true,
                                           data: lengthPrefixed([idrSlice(24)])))
        }
        _ = try resumed.append(MuxerSample(trackID: 1, sequence: 2, pts: now + second, dts: now + second, isKeyframe: true,
                                           data: lengthPrefixed([idrSlice(24)])))
        let summary = try resumed.finish()
        #expect(try MP4Inspection.inspect(path: try #require(summary.segments.first).path).tracks.map(\.sampleCount) == [2])
    }

    @Test("configured intervals beyond 2^40 ns, or not positive, are an invalid configuration")
    func configuration() {
        for edit: (inout MuxerConfiguration) -> Void in [
            { $0.stallTimeout = .max }, { $0.fragmentDuration = MuxerTimestampBounds.maxConfiguredInterval + 1 },
            { $0.maxSegmentDuration = .max }, { $0.maxSegmentDuration = 0 }, { $0.maxSegmentBytes = -1 },
            { $0.maxSampleSize = 0 }, { $0.maxQueuedBytesPerTrack = -5 },
        ] {
            var c = MuxerConfiguration(tracks: [TrackConfiguration(id: 1, label: "v", codec: .h264(sps: X264.sps720p, pps: X264.pps720p))],
                                       directory: "/nonexistent", baseName: "r", creationTime: 0)
            edit(&c)
            expectMuxerError(.invalidConfiguration) { try MP4Muxer(configuration: c) }
        }
    }
}

@Suite("Saturating time arithmetic")
struct SaturatingTimeTests {
    @Test("ns → ticks and back saturate instead of trapping")
    func scaleSaturates() {
        #expect(TimeScaling.nanos(ticks: .max, timescale: 90000) == .max)
        #expect(TimeScaling.nanos(ticks: .min, timescale: 90000) == .min)
        #expect(TimeScaling.nanos(ticks: .max, timescale: 1) == .max)
        #expect(TimeScaling.ticks(nanos: .min, timescale: 90000) == -830_103_483_316_930)  // -2^63 × 9e4 / 1e9 = -830103483316929.6
        #expect(TimeScaling.ticks(nanos: .max, timescale: .max) == .max)
        #expect(TimeScaling.scale(.min, by: 1, over: 1) == .min)
        #expect(TimeScaling.scale(.max, by: 1, over: 1) == .max)
        // A zero timescale (a damaged mdhd) gives 0 instead of dividing by zero.
        #expect(TimeScaling.nanos(ticks: 5, timescale: 0) == 0)
    }

    @Test("sums and differences saturate at the Int64 range")
    func sumsSaturate() {
        #expect(TimeScaling.sum(.max, 1) == .max)
        #expect(TimeScaling.sum(.min, -1) == .min)
        #expect(TimeScaling.sum(40, 2) == 42)
        #expect(TimeScaling.difference(.min + second, 2 * second) == .min)
        #expect(TimeScaling.difference(.max, .min) == .max)
        #expect(TimeScaling.difference(.min, .max) == .min)
        #expect(TimeScaling.difference(44, 2) == 42)
        #expect(UInt64.max.saturatingSum(1) == .max)
        #expect(MovieBuilder.unixTime(.max) == Int64.max - MovieBuilder.epochOffset)
        #expect(MovieBuilder.isoTime(.max) == UInt64(Int64.max))
    }

    @Test("a table with extreme decode times reports saturated ends, not a trap")
    func extremeTable() {
        var table = TrackTable()
        table.appendChunk(offset: 0, decodeTimes: [.max - 1, .max], compositionOffsets: [.max, .min], sizes: [1, 1], sync: [true, true],
                          lastDuration: .max)
        #expect(table.endDecodeTime == .max)
        #expect(table.presentationEndTime == .max)
        #expect(table.durations == [1, .max])
        #expect(table.earliestPresentationTime == .max + Int64(Int32.min)) // the first saturates at .max; the second is smaller
    }
}

@Suite("A damaged file cannot make the reader allocate without bound")
struct DamagedMarkerTests {
    /// The fixture fragment (40 samples) with a sequence marker naming `count` sequences.
    private func fragment(naming count: UInt64) -> MP4FileScanner.Fragment {
        var bytes = SequenceMarkerBox(durableThrough: 1, sequences: [1]).encoded()
        // The one range's count (the payload's last four bytes), as a damaged disk might have it.
        let n = UInt32(count)
        bytes.replaceSubrange(bytes.count - 4..<bytes.count,
                              with: [UInt8(n >> 24), UInt8(truncatingIfNeeded: n >> 16), UInt8(truncatingIfNeeded: n >> 8), UInt8(truncatingIfNeeded: n)])
        var reader = ByteReader(Array(bytes.dropFirst(8)))
        let marker = try! SequenceMarkerBox(freePayload: &reader)
        return MP4FileScanner.Fragment(moofOffset: 0, moof: Fixtures.fragment, mdatPayload: 0..<1_000_000, sequenceMarker: marker)
    }

    @Test("a sequence marker naming more samples than its fragment holds tears the file there")
    func markerCount() {
        #expect(MP4FileScanner.validate(fragment(naming: 40)) == nil)
        #expect(MP4FileScanner.validate(fragment(naming: 41)) != nil)
        // 0xE000_0001 sequences would have been expanded into 28 GiB of UInt64s.
        #expect(MP4FileScanner.validate(fragment(naming: 0xE000_0001)) != nil)
    }
}

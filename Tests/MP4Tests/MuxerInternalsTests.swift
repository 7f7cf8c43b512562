import Shared
@testable import MP4
import Testing

@Suite("SequenceLedger")
struct SequenceLedgerTests {
    @Test("durableThrough advances only over a contiguous settled prefix")
    func outOfOrderSettlement() {
        var ledger = SequenceLedger()
        #expect(ledger.durableThrough == 0)
        #expect(!ledger.isDuplicate(1))
        for s: UInt64 in 1...5 { ledger.appended(s) }
        #expect(ledger.isDuplicate(5) && !ledger.isDuplicate(6))
        ledger.settled([3])
        #expect(ledger.durableThrough == 0)  // 1 and 2 still outstanding
        ledger.settled([1])
        #expect(ledger.durableThrough == 1)
        ledger.settled([2])
        #expect(ledger.durableThrough == 3)  // 2 closes the gap up to the already settled 3
        ledger.settled([5])
        #expect(ledger.durableThrough == 3)
        ledger.settled([4])
        #expect(ledger.durableThrough == 5)
    }

    @Test("sequences need not be consecutive numbers; order is the append order")
    func sparseSequences() {
        var ledger = SequenceLedger()
        for s: UInt64 in [10, 20, 35, 36] { ledger.appended(s) }
        ledger.settled([20, 10])
        #expect(ledger.durableThrough == 20)
        ledger.settled([36])
        #expect(ledger.durableThrough == 20)
        ledger.settled([35])
        #expect(ledger.durableThrough == 36)
        ledger.appended(40)
        #expect(ledger.isDuplicate(40) && ledger.isDuplicate(39) && !ledger.isDuplicate(41))
        #expect(ledger.durableThrough == 36)
    }

    @Test("each lane has its own ack point and its own rule that sequences grow")
    func lanes() throws {
        let a1: UInt64 = 1, a2: UInt64 = 2, a3: UInt64 = 3
        let b1 = try #require(SequenceLane.compose(lane: 1, local: 1))
        let (b2, b3, b4) = (b1 + 1, b1 + 2, b1 + 3)
        var ledger = SequenceLedger()
        // Two senders, interleaved as they arrive: lane 1's numbers are far above lane 0's.
        for s in [a1, b1, b2, a2, b3] { ledger.appended(s) }
        #expect(!ledger.isDuplicate(a3), "lane 1's larger numbers do not make lane 0's next one a duplicate")
        #expect(ledger.isDuplicate(b2) && !ledger.isDuplicate(b4))
        ledger.settled([b1, b2, a2])
        #expect(ledger.points[0] == 0, "lane 0's first sample is still outstanding")
        #expect(ledger.points[1] == b2)
        ledger.settled([a1])
        #expect(ledger.durableThrough == 2 && ledger.points[1] == b2)

        // Resumed from a file: each lane at its point, held samples above it are duplicates.
        let resumed = SequenceLedger(resumingAt: ledger.points, alreadyHeld: [b3, a1, b1])
        #expect(resumed.isDuplicate(b3) && !resumed.isDuplicate(b4) && !resumed.isDuplicate(a3))
        #expect(resumed.points == ledger.points)
        #expect(SequenceLane.lane(of: b3) == 1 && SequenceLane.local(b3) == 3)
        #expect(SequenceLane.compose(lane: 2, local: SequenceLane.maxLocalSequence + 1) == nil)
    }

    @Test("long runs stay correct across compaction of the outstanding list")
    func compaction() {
        var ledger = SequenceLedger()
        for s: UInt64 in 1...3_000 { ledger.appended(s) }
        for s: UInt64 in 1...2_000 { ledger.settled([s]) }
        #expect(ledger.durableThrough == 2_000)
        ledger.settled([2_002])
        #expect(ledger.durableThrough == 2_000)
        ledger.settled([2_001])
        #expect(ledger.durableThrough == 2_002)
        ledger.settled(Array(stride(from: 3_000, through: 2_003, by: -1)))
        #expect(ledger.durableThrough == 3_000)
        for s: UInt64 in 3_001...3_010 { ledger.appended(s) }
        ledger.settled([3_001])
        #expect(ledger.durableThrough == 3_001)
    }
}

@Suite("TimeScaling")
struct TimeScalingTests {
    @Test("whole seconds and NTSC frame durations")
    func basics() {
        #expect(TimeScaling.ticks(nanos: 1_000_000_000, timescale: 90000) == 90000)
        #expect(TimeScaling.ticks(nanos: 1_000_000_000, timescale: 48000) == 48000)
        #expect(TimeScaling.nanos(ticks: 3003, timescale: 90000) == 33_366_667)  // 33_366_666.67
        #expect(TimeScaling.ticks(nanos: 33_366_667, timescale: 90000) == 3003)
        #expect(TimeScaling.nanos(ticks: 960, timescale: 48000) == 20_000_000)
        #expect(TimeScaling.ticks(nanos: 0, timescale: 90000) == 0)
    }

    @Test("round half up (half away from zero for negatives)")
    func rounding() {
        #expect(TimeScaling.ticks(nanos: 5_555, timescale: 90000) == 0)  // 0.49995 ticks
        #expect(TimeScaling.ticks(nanos: 5_556, timescale: 90000) == 1)  // 0.50004 ticks
        #expect(TimeScaling.scale(5, by: 1, over: 2) == 3)   // 2.5
        #expect(TimeScaling.scale(7, by: 1, over: 2) == 4)   // 3.5
        #expect(TimeScaling.scale(4, by: 1, over: 3) == 1)   // 1.33
        #expect(TimeScaling.scale(5, by: 1, over: 3) == 2)   // 1.67
        #expect(TimeScaling.scale(-5, by: 1, over: 2) == -3) // -2.5
        #expect(TimeScaling.scale(-4, by: 1, over: 3) == -1) // -1.33
        #expect(TimeScaling.scale(-1, by: 1, over: 3) == 0)  // -0.33
    }

    @Test("30 hours at 90 kHz does not overflow (ns × 90000 exceeds Int64)")
    func thirtyHours() {
        let nanos: Int64 = 30 * 3600 * 1_000_000_000  // 1.08e14; × 90000 = 9.72e18 > Int64.max
        #expect(TimeScaling.ticks(nanos: nanos, timescale: 90000) == 9_720_000_000)
        #expect(TimeScaling.nanos(ticks: 9_720_000_000, timescale: 90000) == nanos)  // 9.72e9 × 1e9 > Int64.max
        #expect(TimeScaling.nanos(ticks: 9_720_000_001, timescale: 90000) == nanos + 11_111)  // + 11111.1 ns
        #expect(TimeScaling.ticks(nanos: -nanos, timescale: 90000) == -9_720_000_000)
        #expect(TimeScaling.ticks(nanos: nanos, timescale: 48000) == 5_184_000_000)
    }

    @Test("negative times")
    func negatives() {
        #expect(TimeScaling.ticks(nanos: -1_000_000_000, timescale: 90000) == -90000)
        #expect(TimeScaling.nanos(ticks: -1, timescale: 48000) == -20_833)  // -20833.33
        #expect(TimeScaling.nanos(ticks: -3003, timescale: 90000) == -33_366_667)
    }

    @Test("ticks → nanos → ticks is the identity at 90 kHz and 48 kHz")
    func roundTrip() {
        var rng = SplitMix64(seed: 42)
        for _ in 0..<2_000 {
            let ticks = Int64.random(in: -20_000_000_000...20_000_000_000, using: &rng)
            for ts: UInt32 in [90000, 48000] {
                #expect(TimeScaling.ticks(nanos: TimeScaling.nanos(ticks: ticks, timescale: ts), timescale: ts) == ticks)
            }
        }
    }
}

@Suite("TrackTable")
struct TrackTableTests {
    /// Two fragments of video with B-frames; the first fragment guessed its last duration (2900).
    static var table: TrackTable {
        var t = TrackTable()
        t.appendChunk(offset: 1_000, decodeTimes: [0, 3000, 6000], compositionOffsets: [3000, 6000, 0],
                      sizes: [500, 100, 90], sync: [true, false, false], lastDuration: 2900)
        t.appendChunk(offset: 9_000, decodeTimes: [9000, 12000, 15003], compositionOffsets: [3000, 3000, 0],
                      sizes: [480, 110, 95], sync: [true, false, false], lastDuration: 3000)
        return t
    }

    @Test("durations come from consecutive decode times plus the last sample's duration")
    func durations() {
        let t = Self.table
        // 6000 → 9000 is 3000 even though fragment 1 guessed 2900 for its last sample.
        #expect(t.durations == [3000, 3000, 3000, 3000, 3003, 3000])
        #expect(t.endDecodeTime == 18_003)
    }

    @Test("chunks, sizes, sync sample numbers and payload bytes accumulate across fragments")
    func accumulation() {
        let t = Self.table
        #expect(t.sampleCount == 6)
        #expect(t.chunkOffsets == [1_000, 9_000])
        #expect(t.samplesPerChunk == [3, 3])
        #expect(t.syncSampleNumbers == [1, 4])
        #expect(t.sizes == [500, 100, 90, 480, 110, 95])
        #expect(t.payloadBytes == 1_375)
        #expect(t.lastSampleDuration == 3000)
        #expect(!t.allSync)
        #expect(t.hasCompositionOffsets)
    }

    @Test("presentation span accounts for composition offsets")
    func presentation() {
        let t = Self.table
        #expect(t.earliestPresentationTime == 3000)      // min(dts + cts) over the first samples
        #expect(t.presentationEndTime == 18_003)        // max(dts + cts + duration): 12000 + 3000 + 3003
        #expect(TrackTable().earliestPresentationTime == nil)
        #expect(TrackTable().presentationEndTime == 0)
        #expect(TrackTable().durations == [])
        #expect(TrackTable().endDecodeTime == 0)
    }

    @Test("an empty chunk changes nothing")
    func emptyChunk() {
        var t = Self.table
        t.appendChunk(offset: 50_000, decodeTimes: [], compositionOffsets: [], sizes: [], sync: [], lastDuration: 7)
        #expect(t == Self.table)
    }

    @Test("decode times going backwards or far apart clamp into UInt32")
    func clamping() {
        var t = TrackTable()
        t.appendChunk(offset: 0, decodeTimes: [100, 50, 50 + 0x1_0000_0005], compositionOffsets: [0, 0, 0],
                      sizes: [1, 1, 1], sync: [true, true, true], lastDuration: 1)
        #expect(t.durations == [0, UInt32.max, 1])
        #expect(t.allSync)
    }
}

@Suite("MuxerConfiguration")
struct MuxerConfigurationTests {
    static func configuration() -> MuxerConfiguration {
        MuxerConfiguration(tracks: [], directory: "/rec/2024-05-01", baseName: "cam", creationTime: 0)
    }

    @Test("one file: <directory>/<baseName>.mp4 whatever the index")
    func singleFile() {
        let c = Self.configuration()
        #expect(!c.isSegmented)
        #expect(c.path(forSegment: 0) == "/rec/2024-05-01/cam.mp4")
        #expect(c.path(forSegment: 3) == "/rec/2024-05-01/cam.mp4")
    }

    @Test("segments are numbered from 0001, zero-padded to four digits, then wider")
    func segmented() {
        var c = Self.configuration()
        c.maxSegmentDuration = 600_000_000_000
        #expect(c.isSegmented)
        #expect(c.path(forSegment: 0) == "/rec/2024-05-01/cam-0001.mp4")
        #expect(c.path(forSegment: 9) == "/rec/2024-05-01/cam-0010.mp4")
        #expect(c.path(forSegment: 998) == "/rec/2024-05-01/cam-0999.mp4")
        #expect(c.path(forSegment: 9_998) == "/rec/2024-05-01/cam-9999.mp4")
        #expect(c.path(forSegment: 9_999) == "/rec/2024-05-01/cam-10000.mp4")

        var bySize = Self.configuration()
        bySize.maxSegmentBytes = 1 << 30
        #expect(bySize.path(forSegment: 1) == "/rec/2024-05-01/cam-0002.mp4")
    }

    @Test("defaults suit a live recorder")
    func defaults() {
        let c = Self.configuration()
        #expect(c.fragmentDuration == 1_000_000_000)
        #expect(c.stallTimeout == 500_000_000)
        #expect(c.durability == .fsyncEveryFragment)
        #expect(c.finalizeMode == .inPlace)
        #expect(c.maxSampleSize == 16 << 20)
        #expect(c.maxQueuedBytesPerTrack == 64 << 20)
        #expect(c.fileMode == 0o600)
    }
}

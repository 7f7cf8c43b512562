@testable import RecordServerCore
import Testing

/// TrackStatistics takes pts straight from the agent's Sample (issue 14, finding 1: pts = dts =
/// Int64.min + 10⁹ trapped on the rate window's start and killed every session of the server).
@Suite struct TrackStatisticsTests {
    private func statistics() -> TrackStatistics {
        TrackStatistics(trackID: 1, label: "front", kind: "video", codec: "h264", width: 1280, height: 720)
    }

    @Test("pts near Int64.min is counted, not a trap")
    func minimalPTS() {
        var s = statistics()
        s.record(pts: .min + 1_000_000_000, bytes: 100)
        s.record(pts: .min + 1_000_000_000, bytes: 100)
        s.record(pts: .min, bytes: 50)
        #expect(s.samples == 3)
        #expect(s.bytes == 250)
        #expect(s.lastPTS == .min + 1_000_000_000)
        #expect(s.rates.fps == 0) // all at (nearly) one instant: no rate
    }

    @Test("a pts that never advances does not grow the rate window past its cap")
    func standingPTS() {
        var s = statistics()
        for _ in 0 ..< 3 * TrackStatistics.maxWindowSamples { s.record(pts: 5_000_000_000, bytes: 10) }
        #expect(s.windowSampleCount == TrackStatistics.maxWindowSamples)
        #expect(s.samples == Int64(3 * TrackStatistics.maxWindowSamples))
        // Then ordinary 30 fps: the window holds the last two seconds and gives 30 fps.
        for frame in 1 ... 120 { s.record(pts: 5_000_000_000 + Int64(frame) * 33_333_333, bytes: 1000) }
        #expect(s.windowSampleCount == 61)
        #expect(abs(s.rates.fps - 30) < 0.1, "\(s.rates.fps)")
    }

    @Test("pts jumping from Int64.min to Int64.max gives finite rates")
    func extremeJump() {
        var s = statistics()
        s.record(pts: .min, bytes: 10)
        s.record(pts: .max, bytes: 10)
        #expect(s.lastPTS == .max)
        let rates = s.rates
        #expect(rates.fps.isFinite && rates.fps >= 0)
        #expect(rates.bitrate.isFinite && rates.bitrate >= 0)
    }

    @Test("ordinary samples: 30 fps over the two-second window")
    func ordinary() {
        var s = statistics()
        for i in 0..<90 { s.record(pts: 5_000_000_000 + Int64(i) * 33_333_333, bytes: 1000) }
        let rates = s.rates
        #expect(abs(rates.fps - 30) < 0.1)
        #expect(abs(rates.bitrate - 240_000) < 1000)
    }
}

import Foundation
import NIOCore

/// Running figures for one track of a live session (fps and bitrate over a sliding window
/// of media time, so they need no clock).
struct TrackStatistics: Sendable {
    let trackID: UInt8
    let label: String
    let kind: String
    let codec: String
    let width: Int
    let height: Int
    var status: TrackStatus = .active
    var samples: Int64 = 0
    var bytes: Int64 = 0
    var dropped: Int64 = 0
    var rejected: Int64 = 0
    var lastError: String?
    var lastPTS: Int64?
    /// Media time the rates are taken over: two seconds.
    static let rateWindow: Int64 = 2_000_000_000
    /// At most this many samples in the window. Time alone does not bound it: a track's PTS
    /// need not advance (B-frames; a hostile agent can send one PTS forever, and every sample
    /// stayed). 4096 is more than two seconds of any track we record (Opus at 2.5 ms: 800).
    static let maxWindowSamples = 4096
    /// (pts, bytes) of recent samples, for fps and bitrate over the last two seconds.
    private var window = CircularBuffer<(pts: Int64, bytes: Int)>(initialCapacity: 64)
    var windowSampleCount: Int { window.count }

    init(trackID: UInt8, label: String, kind: String, codec: String, width: Int, height: Int) {
        self.trackID = trackID
        self.label = label
        self.kind = kind
        self.codec = codec
        self.width = width
        self.height = height
    }

    mutating func record(pts: Int64, bytes count: Int) {
        samples += 1
        bytes += Int64(count)
        lastPTS = max(lastPTS ?? pts, pts)
        window.append((pts, count))
        // pts is the agent's number: the window's start saturates instead of overflowing.
        let (start, overflow) = (lastPTS ?? pts).subtractingReportingOverflow(Self.rateWindow)
        let horizon = overflow ? Int64.min : start
        while let first = window.first, first.pts < horizon || window.count > Self.maxWindowSamples { window.removeFirst() }
    }

    var rates: (fps: Double, bitrate: Double) {
        guard let first = window.first?.pts, let last = lastPTS, last > first, window.count > 1 else { return (0, 0) }
        // In Double: last - first may not fit 64 bits for hostile timestamps.
        let seconds = (Double(last) - Double(first)) / 1e9
        return (Double(window.count - 1) / seconds, Double(window.dropFirst().reduce(0) { $0 + $1.bytes }) * 8 / seconds)
    }
}

import Foundation
import Testing
import TestSupport

/// Shared by the fault tests: the decoded recording has 2 H.264 video tracks and 1 Opus track,
/// ffmpeg printed no errors, and every video track's frame counters are readable and run
/// 0..N-1 exactly once in order, with N in `expected`. Returns N per video track.
@discardableResult
func checkContiguousFrames(_ decoded: DecodedRecording, expected: ClosedRange<Int>, context: String = "the recording") -> [Int] {
    #expect(decoded.decodeErrors.isEmpty, "ffmpeg on \(context): \(decoded.decodeErrors)")
    #expect(decoded.streams.map(\.type).sorted() == ["audio", "video", "video"], "\(context): \(decoded.streams.map(\.type))")
    #expect(decoded.streams.filter { $0.type == "video" }.allSatisfy { $0.codec == "h264" })
    #expect(decoded.streams.first { $0.type == "audio" }?.codec == "opus")
    #expect(decoded.videoFrames.count == 2)
    var counts: [Int] = []
    for frames in decoded.videoFrames {
        let numbers = frames.compactMap(\.number)
        #expect(numbers.count == frames.count, "every frame's counter is readable in \(context)")
        let n = numbers.count
        #expect(expected.contains(n), "\(n) frames in \(context), expected \(expected)")
        #expect(numbers == Array(0..<n), "\(context): first problem at \(zip(numbers, 0...).first { $0 != $1 }.map { "\($0)" } ?? "-")")
        counts.append(n)
    }
    return counts
}

/// Packets in all streams of `path`, counted by ffprobe.
func countPackets(_ path: String) throws -> Int {
    try Oracle.streams(path).map(\.packets).reduce(0, +)
}

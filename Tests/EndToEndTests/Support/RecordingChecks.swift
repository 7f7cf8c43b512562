import Foundation
import RecordServerCore
import Testing
import TestSupport

/// Checks the acceptance criteria on a recording of two 30 fps test cameras and test audio
/// (``checkContiguousFrames``, with the drops the agent reported in the catalog of
/// `dataDirectory`), and that sound and picture stay within a frame of each other.
func checkRecording(_ path: String, expectedFrames: ClosedRange<Int>, dataDirectory: String) throws {
    let decoded = try DecodedRecording(path: path)
    checkContiguousFrames(decoded, expected: expectedFrames, drops: try reportedDrops(in: path, dataDirectory: dataDirectory), context: path)
    let offset = try #require(decoded.worstAudioVideoOffset(fps: 30), "flashes and beeps found")
    #expect(offset <= 1.0 / 30 + 0.001, "audio/video offset \(offset * 1000) ms")
}

/// Shared by the end-to-end tests: the decoded recording has 2 H.264 video tracks and 1 Opus track,
/// ffmpeg printed no errors, and every video track's frame counters are readable and run from
/// 0 in order, each at most once, to N-1 with N in `expected`. A counter may be missing only
/// as a frame the agent dropped at the source and reported (`drops`, by track label: the
/// catalog's `dropped`, from its DropReports; an encoder starved of CPU drops and says so),
/// never silently. Returns the frames read per video track.
@discardableResult
func checkContiguousFrames(_ decoded: DecodedRecording, expected: ClosedRange<Int>, drops: [String: Int] = [:],
                           context: String = "the recording") -> [Int] {
    #expect(decoded.decodeErrors.isEmpty, "ffmpeg on \(context): \(decoded.decodeErrors)")
    #expect(decoded.streams.map(\.type).sorted() == ["audio", "video", "video"], "\(context): \(decoded.streams.map(\.type))")
    #expect(decoded.streams.filter { $0.type == "video" }.allSatisfy { $0.codec == "h264" })
    #expect(decoded.streams.first { $0.type == "audio" }?.codec == "opus")
    #expect(decoded.videoFrames.count == 2)
    var counts: [Int] = []
    for (stream, frames) in zip(decoded.streams.filter { $0.type == "video" }, decoded.videoFrames) {
        let numbers = frames.compactMap(\.number)
        #expect(numbers.count == frames.count, "every frame's counter is readable in \(context)")
        let span = (numbers.last ?? -1) + 1
        let missing = (0..<span).filter { !Set(numbers).contains($0) }
        #expect(expected.contains(span), "\(span) frames in \(context) (\(stream.label)), expected \(expected)")
        #expect(numbers.first == 0 && zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 },
                "\(context) (\(stream.label)): counters not strictly increasing from 0, first problem at \(zip(numbers, numbers.dropFirst()).first { $0 >= $1 }.map { "\($0)" } ?? "-")")
        #expect(missing.count <= drops[stream.label, default: 0],
                "\(context) (\(stream.label)): frames \(missing.prefix(10)) missing, \(drops[stream.label, default: 0]) reported dropped by the agent")
        counts.append(numbers.count)
    }
    return counts
}

/// Per track label, the samples the agent reported dropped at the source in the session that
/// wrote `file`, from the catalog of `dataDirectory`.
func reportedDrops(in file: String, dataDirectory: String) throws -> [String: Int] {
    let catalog = try Catalog(path: dataDirectory + "/catalog.sqlite")
    guard let recording = try catalog.recordings(RecordingFilter()).first(where: { $0.path == file }) else { return [:] }
    return Dictionary(try catalog.tracks(sessionID: recording.sessionID).map { ($0.label, Int($0.dropped)) }, uniquingKeysWith: +)
}

/// Packets in all streams of `path`, counted by ffprobe.
func countPackets(_ path: String) throws -> Int {
    try Oracle.streams(path).map(\.packets).reduce(0, +)
}

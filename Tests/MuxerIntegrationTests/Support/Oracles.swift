import TestSupport
import Foundation
import Shared
import Testing

// MARK: - Timeline semantics the oracles assert
//
// Every file is judged by ffprobe/ffmpeg, never by our own reader. What they must show:
//
// * Time zero of a file (T0) is the earliest PTS over all tracks of the samples that file
//   holds (for a segment: its own earliest PTS; `SegmentSummary.startNanos` places it on the
//   session timeline, whose zero is the first file's T0).
// * Streams have time_base 1/90000 (H.264) and 1/48000 (Opus).
// * Video packet timestamps, in stream ticks:
//       pts = round((inputPTS − T0) · 90000 / 1e9)
//       dts = round((inputDTS − T0) · 90000 / 1e9)
//   With B-frames the first DTS is negative, as in ffmpeg's own MP4s (the edit list starts
//   presentation at the first PTS).
// * Opus packet timestamps, in stream ticks:
//       pts = dts = round((inputPTS − T0) · 48000 / 1e9) − preSkip
//   because the edit list's media_time is the pre-skip (ffmpeg-written Opus MP4s likewise show
//   the first packet at −312).
// * A track that starts after T0 keeps its offset (an empty edit): its first packet is at
//   its own offset, and ffprobe's stream start_time reflects it.
// * Every packet is compared: same count as the input, each pts/dts within 1 tick, same
//   size, same Adler-32 of the payload in MP4 form, keyframe flag = input keyframe flag.
// * Each stream's handler_name (ffprobe stream_tags) is the track label.
// * `ffmpeg -v error -i F -f null -` prints nothing and exits 0.

/// round(nanos · timescale / 1e9), half away from zero.
func ticks(_ nanos: Int64, _ timescale: Int64) -> Int64 {
    Int64((Double(nanos) * Double(timescale) / 1e9).rounded())
}

/// The earliest PTS over the given tracks' samples (a file's T0).
func presentationOrigin(_ tracks: [ExpectedTrack]) -> Int64 {
    tracks.flatMap(\.samples).map(\.pts).min()!
}

struct ExpectedPacket {
    var pts: Int64
    var dts: Int64
    var size: Int
    var adler: UInt32
    var isKeyframe: Bool
}

func expectedPackets(_ track: ExpectedTrack, origin: Int64) -> [ExpectedPacket] {
    track.samples.map { s in
        if track.isVideo {
            return ExpectedPacket(pts: ticks(s.pts - origin, 90000), dts: ticks(s.dts - origin, 90000), size: s.mp4Size,
                                  adler: s.mp4Adler, isKeyframe: s.isKeyframe)
        }
        let t = ticks(s.pts - origin, 48000) - Int64(track.preSkip)
        return ExpectedPacket(pts: t, dts: t, size: s.mp4Size, adler: s.mp4Adler, isKeyframe: true)
    }
}

/// Runs every external oracle on `file` and records an issue for each deviation from
/// `expected` (tracks with no samples must be absent). Returns the probe for further checks.
@discardableResult
func assertOracles(file: String, expected allTracks: [ExpectedTrack], origin: Int64? = nil,
                   sourceLocation: SourceLocation = #_sourceLocation) -> ProbeResult? {
    let expected = allTracks.filter { !$0.samples.isEmpty }
    guard !expected.isEmpty else {
        Issue.record("no expected samples for \(file)", sourceLocation: sourceLocation)
        return nil
    }
    let name = (file as NSString).lastPathComponent
    let t0 = origin ?? presentationOrigin(expected)

    // 1. ffmpeg decodes every stream without a word.
    do {
        let decode = try ffmpegDecodeCheck(file)
        #expect(decode.status == 0, "ffmpeg decode of \(name) exited \(decode.status)", sourceLocation: sourceLocation)
        #expect(decode.stderr.isEmpty, "ffmpeg -v error on \(name) printed: \(decode.stderr.prefix(1500))", sourceLocation: sourceLocation)
        #expect(decode.stdout.isEmpty, "ffmpeg printed to stdout", sourceLocation: sourceLocation)
    } catch {
        Issue.record("ffmpeg decode of \(name) failed: \(error)", sourceLocation: sourceLocation)
    }

    // 2. Top-level structure: a regular MP4 (ftyp, mdat, moov) covering the file exactly.
    do {
        let boxes = try topLevelBoxes(file)
        let size = (try FileManager.default.attributesOfItem(atPath: file)[.size] as? NSNumber)?.uint64Value ?? 0
        let end = boxes.last.map { $0.offset + $0.size } ?? 0
        #expect(end == size, "top-level boxes of \(name) end at \(end), file is \(size) bytes", sourceLocation: sourceLocation)
        #expect(boxes.first?.type == "ftyp", "\(name) starts with \(boxes.first?.type ?? "nothing")", sourceLocation: sourceLocation)
        #expect(Set(boxes.map(\.type)) == ["ftyp", "mdat", "moov"] && boxes.count == 3,
                "\(name) top-level boxes: \(boxes.map(\.type))", sourceLocation: sourceLocation)
    } catch {
        Issue.record("cannot read boxes of \(name): \(error)", sourceLocation: sourceLocation)
    }

    // 3. ffprobe: streams, then every packet.
    let probe: ProbeResult
    do {
        let (result, stderr) = try FFprobe.probe(file)
        #expect(stderr.isEmpty, "ffprobe -v error on \(name) printed: \(stderr.prefix(1500))", sourceLocation: sourceLocation)
        probe = result
    } catch {
        Issue.record("ffprobe cannot read \(name): \(error)", sourceLocation: sourceLocation)
        return nil
    }
    #expect(probe.formatName.contains("mp4"), "format \(probe.formatName)", sourceLocation: sourceLocation)
    #expect(probe.streams.count == expected.count,
            "\(name): \(probe.streams.count) streams (\(probe.streams.map { $0.handlerName ?? "?" })), expected \(expected.map(\.label))",
            sourceLocation: sourceLocation)
    for track in expected {
        guard let stream = probe.stream(label: track.label) else {
            Issue.record("\(name): no stream with handler_name \(track.label)", sourceLocation: sourceLocation)
            continue
        }
        let what = "\(name) stream \(stream.index) '\(track.label)'"
        #expect(stream.codecName == track.codecName, "\(what): codec \(stream.codecName)", sourceLocation: sourceLocation)
        #expect(stream.codecType == (track.isVideo ? "video" : "audio"), "\(what): type \(stream.codecType)", sourceLocation: sourceLocation)
        #expect(stream.timeBase == "1/\(track.timescale)", "\(what): time_base \(stream.timeBase)", sourceLocation: sourceLocation)
        if track.isVideo {
            #expect(stream.width == track.width && stream.height == track.height,
                    "\(what): \(stream.width ?? 0)x\(stream.height ?? 0), expected \(track.width)x\(track.height)", sourceLocation: sourceLocation)
        }
        #expect(stream.nbFrames == track.samples.count, "\(what): nb_frames \(stream.nbFrames ?? -1), expected \(track.samples.count)",
                sourceLocation: sourceLocation)
        comparePackets(probe.packets(stream: stream.index), expectedPackets(track, origin: t0), what: what, sourceLocation: sourceLocation)
    }
    return probe
}

/// Count equal; each pts/dts within 1 tick; size, payload hash and keyframe flag equal.
func comparePackets(_ actual: [ProbePacket], _ expected: [ExpectedPacket], what: String, sourceLocation: SourceLocation) {
    #expect(actual.count == expected.count, "\(what): \(actual.count) packets, expected \(expected.count)", sourceLocation: sourceLocation)
    var problems: [String] = []
    var bad = 0
    for (i, (a, e)) in zip(actual, expected).enumerated() {
        var p: [String] = []
        if let pts = a.pts { if abs(pts - e.pts) > 1 { p.append("pts \(pts) != \(e.pts)") } } else { p.append("no pts") }
        if let dts = a.dts { if abs(dts - e.dts) > 1 { p.append("dts \(dts) != \(e.dts)") } } else { p.append("no dts") }
        if a.size != e.size { p.append("size \(a.size) != \(e.size)") }
        if a.hash != "adler32:" + hex8(e.adler) { p.append("payload hash \(a.hash ?? "-") != \(hex8(e.adler))") }
        if a.isKeyframe != e.isKeyframe { p.append("keyframe \(a.isKeyframe) != \(e.isKeyframe)") }
        if !p.isEmpty {
            bad += 1
            if problems.count < 6 { problems.append("#\(i): " + p.joined(separator: ", ")) }
        }
    }
    #expect(bad == 0, "\(what): \(bad) packets differ from the input: \(problems.joined(separator: "; "))", sourceLocation: sourceLocation)
}

/// Video track: the decoded pictures carry the frame numbers 0..<count, each exactly once, in order.
func assertFrameCounters(file: String, probe: ProbeResult, track: ExpectedTrack, count: Int? = nil, first: Int = 0,
                         sourceLocation: SourceLocation = #_sourceLocation) {
    guard let stream = probe.stream(label: track.label) else {
        Issue.record("no stream \(track.label)", sourceLocation: sourceLocation)
        return
    }
    do {
        let numbers = try decodedFrameNumbers(file: file, streamIndex: stream.index, width: track.width, height: track.height)
        let n = count ?? track.samples.count
        #expect(numbers == (first..<first + n).map { Optional($0) },
                "\(track.label): decoded frame numbers \(summarize(numbers)), expected \(first)..<\(first + n)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("decoding \(track.label) of \(file): \(error)", sourceLocation: sourceLocation)
    }
}

func summarize(_ numbers: [Int?]) -> String {
    if numbers.count <= 12 { return "\(numbers.map { $0.map(String.init) ?? "nil" })" }
    let head = numbers.prefix(5).map { $0.map(String.init) ?? "nil" }
    let tail = numbers.suffix(5).map { $0.map(String.init) ?? "nil" }
    return "\(numbers.count) frames [\(head.joined(separator: ",")) … \(tail.joined(separator: ","))], \(numbers.filter { $0 == nil }.count) unreadable"
}

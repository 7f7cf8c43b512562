import Foundation
import MediaEncoding

/// What a recording of test cameras and test audio holds, with ffprobe/ffmpeg as the
/// independent judge: each video stream's decoded frame counters (the test pattern's bar code)
/// with their presentation times, the decoded audio, and what ffmpeg says while decoding.
public struct DecodedRecording {
    public struct Stream {
        public var index: Int
        public var type: String
        public var codec: String
        public var width: Int
        public var height: Int
        public var startTime: Double
        /// The track label (the handler name we write).
        public var label: String
    }
    public var streams: [Stream] = []
    /// Per video stream (in stream order): frame numbers read from the bar code and frame times.
    public var videoFrames: [[(number: Int?, time: Double)]] = []
    public var audioStart = 0.0
    public var audioSamples: [Int16] = []
    /// ffmpeg's complaints while decoding everything (must be empty).
    public var decodeErrors = ""

    public init(path: String) throws {
        streams = try FFprobe.streams(path).map {
            Stream(index: $0.index, type: $0.codecType, codec: $0.codecName, width: $0.width ?? 0, height: $0.height ?? 0, startTime: $0.startTime ?? 0,
                   label: $0.handlerName ?? "")
        }
        for stream in streams where stream.type == "video" {
            let times = try Self.stdout("ffprobe", [
                "-v", "error", "-select_streams", "\(stream.index)", "-show_entries", "frame=pts_time", "-of", "csv=p=0", path,
            ]).split(whereSeparator: \.isNewline).map { Double($0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: ","))) ?? .nan }
            let numbers = try decodedFrameNumbers(file: path, streamIndex: stream.index, width: stream.width, height: stream.height)
            videoFrames.append(numbers.enumerated().map { i, number in (number, i < times.count ? times[i] : .nan) })
        }
        if let audio = streams.first(where: { $0.type == "audio" }) {
            // On the file's timeline from 0: packets an agent reported dropped leave gaps in the
            // timestamps, which become silence here instead of pulling every later beep earlier
            // (ffmpeg otherwise decodes packet after packet as if they touched).
            audioStart = 0
            let pcm = try runTool("ffmpeg", ["-v", "error", "-i", path, "-map", "0:\(audio.index)",
                                             "-af", "aresample=async=1:min_hard_comp=0.001:first_pts=0", "-f", "s16le", "-ac", "1", "-ar", "48000", "-"])
            guard pcm.status == 0 else { throw ToolError.failed("ffmpeg audio decode of \(path)", pcm) }
            audioSamples = pcm.stdout.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        }
        let decode = try ffmpegDecodeCheck(path)
        decodeErrors = decode.stderr.trimmingCharacters(in: .whitespacesAndNewlines)
        if decode.status != 0 && decodeErrors.isEmpty { decodeErrors = "ffmpeg exited \(decode.status)" }
    }

    private static func stdout(_ tool: String, _ arguments: [String]) throws -> String {
        let out = try runTool(tool, arguments)
        guard out.status == 0 else { throw ToolError.failed("\(tool) \(arguments.joined(separator: " "))", out) }
        return out.stdoutText
    }

    /// Largest distance between each beep and the flash nearest to it, seconds.
    public func worstAudioVideoOffset(fps: Int) -> Double? {
        let flashes = flashTimes(videoTrack: 0, fps: fps), beeps = beepTimes()
        guard !beeps.isEmpty, !flashes.isEmpty else { return nil }
        return Self.offsets(beeps, flashes).max()
    }

    /// When the test camera of video track `index` (in file order) flashes: every frame whose
    /// counter is a multiple of `fps`, seconds on the file's timeline.
    public func flashTimes(videoTrack index: Int, fps: Int) -> [Double] {
        guard videoFrames.indices.contains(index) else { return [] }
        return videoFrames[index].compactMap { f -> Double? in
            guard let n = f.number, n % fps == 0 else { return nil }
            return f.time
        }
    }

    /// When the test tone beeps, seconds on the file's timeline.
    public func beepTimes() -> [Double] {
        TestToneReader.beepOnsets(samples: audioSamples, sampleRate: 48000).map { audioStart + Double($0) / 48000 }
    }

    /// The events of `events` that fall while `references` ran: within half a second of its
    /// first and last event (events come once a second). A beep in the moment before a camera's
    /// first frame or after its last has no flash to match, and would be paired with one a
    /// second away.
    public static func during(_ events: [Double], _ references: [Double]) -> [Double] {
        guard let first = references.first, let last = references.last else { return [] }
        return events.filter { $0 >= first - 0.5 && $0 <= last + 0.5 }
    }

    /// For each event of `events`, its distance to the nearest of `references`, seconds.
    public static func offsets(_ events: [Double], _ references: [Double]) -> [Double] {
        signedOffsets(events, references).map(abs)
    }

    /// For each event of `events`, the event's time minus the nearest reference's, seconds.
    public static func signedOffsets(_ events: [Double], _ references: [Double]) -> [Double] {
        guard !references.isEmpty else { return [] }
        return events.map { e in e - references.min { abs($0 - e) < abs($1 - e) }! }
    }

    /// How far apart the tracks start, and end (seconds): first video frame and first audio
    /// sample; last frame plus one frame of `fps`, and the audio's end.
    public func startAndEndSpread(fps: Int) -> (start: Double, end: Double) {
        let frame = 1.0 / Double(fps)
        var starts = videoFrames.compactMap { $0.first?.time }
        var ends = videoFrames.compactMap { $0.last.map { $0.time + frame } }
        if !audioSamples.isEmpty {
            starts.append(audioStart)
            ends.append(audioStart + Double(audioSamples.count) / 48000)
        }
        return ((starts.max() ?? 0) - (starts.min() ?? 0), (ends.max() ?? 0) - (ends.min() ?? 0))
    }

    /// Per video track (file order): its frame counters (burnt in by the test camera), which
    /// must run in order, each at most once; `missing` counts the ones absent between the
    /// first and the last. The first need not be 0 (a scheduled start drops the test camera's
    /// frames before it).
    public func frameCounters() -> [(label: String, numbers: [Int], unreadable: Int, inOrder: Bool, missing: Int)] {
        zip(streams.filter { $0.type == "video" }, videoFrames).map { stream, frames in
            let numbers = frames.compactMap(\.number)
            let missing = numbers.isEmpty ? 0 : numbers[numbers.count - 1] - numbers[0] + 1 - numbers.count
            return (stream.label, numbers, frames.count - numbers.count, zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 }, missing)
        }
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import BenchSupport
import Shared

/// One muxer run: start + appends timed apart from `finish()` (finalize).
struct MuxRun {
    var start: Double
    var append: Double
    var finish: Double
    var cpu: CPUTime
    /// Peak RSS above the RSS before the run, KiB (the content itself is already resident).
    var peakExtraRSSKiB: Int?
    var path: String
    var fileSize: UInt64
    var samples: Int
    var payloadBytes: UInt64
    var fragments: Int
    var total: Double { start + append + finish }
}

func durabilityName(_ d: MuxerConfiguration.Durability) -> String {
    switch d {
    case .none: ".none"
    case .fsyncEveryFragment: ".fsyncEveryFragment"
    case .fsyncWhenAsked: ".fsyncWhenAsked"
    }
}

/// Muxes `samples` into `<directory>/<baseName>.mp4` with the default configuration except durability.
func runMuxer(tracks: [TrackConfiguration], samples: ArraySlice<MuxerSample>, durability: MuxerConfiguration.Durability,
              directory: String, baseName: String) throws -> MuxRun {
    var configuration = MuxerConfiguration(tracks: tracks, directory: directory, baseName: baseName, creationTime: 1_700_000_000)
    configuration.durability = durability
    let muxer = try MP4Muxer(configuration: configuration)
    let rssBefore = procStatusKiB("VmRSS")
    let canMeasurePeak = resetPeakRSS()
    let cpu0 = CPUTime.self_()
    let t0 = monotonicNanos()
    try muxer.start()
    let t1 = monotonicNanos()
    for sample in samples { _ = try muxer.append(sample) }
    let t2 = monotonicNanos()
    let summary = try muxer.finish()
    let t3 = monotonicNanos()
    let cpu = CPUTime.self_() - cpu0
    var peak: Int?
    if canMeasurePeak, let before = rssBefore, let hwm = procStatusKiB("VmHWM") { peak = max(0, hwm - before) }
    guard summary.segments.count == 1, let segment = summary.segments.first else {
        throw BenchError("expected one output file, got \(summary.segments.count)")
    }
    let count = segment.tracks.reduce(0) { $0 + $1.sampleCount }
    guard count == samples.count else { throw BenchError("muxer wrote \(count) samples of \(samples.count)") }
    return MuxRun(start: elapsed(from: t0, to: t1), append: elapsed(from: t1, to: t2), finish: elapsed(from: t2, to: t3), cpu: cpu,
                  peakExtraRSSKiB: peak, path: segment.path, fileSize: segment.fileSize, samples: count,
                  payloadBytes: segment.tracks.reduce(0) { $0 + $1.payloadBytes }, fragments: segment.fragmentCount)
}

/// `ffmpeg -nostdin -v error -y -i same.mp4 -map 0 -c copy out.mp4`
func ffmpegCopyArguments(input: String, output: String) -> [String] {
    ["ffmpeg", "-nostdin", "-v", "error", "-y", "-i", input, "-map", "0", "-c", "copy", output]
}

func runFFmpegCopy(input: String, output: String) throws -> ChildRun {
    RandomAccessFile.remove(output) // truncating the previous output is not part of the copy
    let run = try spawnAndWait(ffmpegCopyArguments(input: input, output: output))
    guard run.exitStatus == 0 else { throw BenchError("ffmpeg exited with status \(run.exitStatus)") }
    return run
}

/// Top-level boxes of an MP4 file: (type, size).
func topLevelBoxes(_ path: String) -> [(String, UInt64)] {
    guard let file = try? RandomAccessFile(path: path, mode: .readOnly), let size = try? file.size() else { return [] }
    var out: [(String, UInt64)] = []
    var offset: UInt64 = 0
    while offset + 8 <= size, let h = try? file.read(count: 16, at: offset), h.count >= 8 {
        var boxSize = UInt64(h[0]) << 24 | UInt64(h[1]) << 16 | UInt64(h[2]) << 8 | UInt64(h[3])
        let type = String(decoding: h[4..<8], as: UTF8.self)
        if boxSize == 1, h.count == 16 { boxSize = h[8..<16].reduce(0) { $0 << 8 | UInt64($1) } }
        if boxSize == 0 { boxSize = size - offset }
        guard boxSize >= 8 else { break }
        out.append((type, boxSize))
        offset += boxSize
    }
    return out
}

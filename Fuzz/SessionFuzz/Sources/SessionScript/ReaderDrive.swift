import MP4

/// The file side of the fuzzing (issue 13): any bytes as an MP4 file, read by
/// ``MP4Inspection``, finalized by ``MP4Recovery`` and continued by ``MP4Muxer/resume(configuration:)``,
/// all on memory files (``MemoryFiles``). Checks:
/// - nothing traps or hangs, whatever the bytes (the fuzzer's oracle);
/// - a file recovery accepts becomes a regular MP4: the reader reads it, with as many samples
///   as recovery reported, and recovering it again finds nothing to do;
/// - a file resume accepts takes new samples and finishes into files the reader reads.
/// Shared by the libFuzzer target (Fuzz/SessionFuzz, `ReaderFuzz`) and its regression replay
/// in MP4Tests.
public enum ReaderDrive {
    static let directory = MemoryFiles.root + "reader"

    /// The configuration a resumed file is continued with: one H.264 camera and one Opus
    /// microphone, as the seeds are recorded.
    public static func configuration(segmentBytes: Int? = nil) -> MuxerConfiguration {
        var configuration = MuxerConfiguration(
            tracks: [SessionDrive.trackConfiguration(.init(id: 1, isVideo: true)), SessionDrive.trackConfiguration(.init(id: 2, isVideo: false))],
            directory: directory, baseName: "r", creationTime: 1_700_000_000)
        configuration.durability = .none
        configuration.maxSegmentBytes = segmentBytes
        return configuration
    }

    /// Runs the checks on `bytes`; returns what was violated (empty when all is well).
    public static func run(_ bytes: [UInt8]) -> [String] {
        defer { MemoryFiles.removeAll(under: directory) }
        var violations: [String] = []
        let path = configuration().path(forSegment: 0)

        // The reader, then recovery, on one copy.
        write(bytes, to: path)
        _ = try? MP4Inspection.inspect(path: path)
        if let report = try? MP4Recovery.recover(path: path) {
            if let read = try? MP4Inspection.inspect(path: path) {
                let samples = read.tracks.reduce(0) { $0 + $1.sampleCount }
                if !report.alreadyFinalized, samples != report.samplesRecovered {
                    violations.append("recovery reported \(report.samplesRecovered) samples, the reader finds \(samples)")
                }
            } else {
                violations.append("a file recovery finalized cannot be read")
            }
            if (try? MP4Recovery.recover(path: path))?.alreadyFinalized != true {
                violations.append("a file recovery finalized is not a finalized MP4 for recovery itself")
            }
        }
        MemoryFiles.remove(path)

        // Resume on a fresh copy: continue the recording, then finish it.
        write(bytes, to: path)
        guard let resumed = try? MP4Muxer.resume(configuration: configuration()) else { return violations }
        let muxer = resumed.0
        var sequence = resumed.1.durableThroughSequence
        let start = SessionScript.startTime + 3_600_000_000_000  // after anything a seed holds
        // A damaged sequence marker can claim any ack point; an agent could not send after 2^64 − 1.
        for i in 0 ..< (sequence < UInt64.max / 2 ? 4 : 0) {
            for track in [UInt32(1), 2] {
                sequence += 1
                let isVideo = track == 1
                let sample = SessionScript.Sample(trackID: track, sequence: sequence, pts: start + Int64(i) * 20_000_000,
                                                  dts: start + Int64(i) * 20_000_000, duration: 20_000_000, keyframe: true,
                                                  payload: isVideo ? .idr : .raw, size: 40)
                _ = try? muxer.append(MuxerSample(trackID: track, sequence: sequence, pts: sample.pts, dts: sample.dts,
                                                  duration: sample.duration, isKeyframe: true, data: SessionDrive.payload(sample, video: isVideo)))
            }
        }
        guard muxer.status == .running, let summary = try? muxer.finish() else { return violations }
        for segment in summary.segments where (try? MP4Inspection.inspect(path: segment.path)) == nil {
            violations.append("\(segment.path): a resumed recording finished into a file the reader cannot read")
        }
        return violations
    }

    /// Files as the recorder leaves them, for the fuzzer to start from: finished in place,
    /// finished with faststart, and unfinished (a crash after three fragments).
    public static func seeds() -> [[UInt8]] {
        defer { MemoryFiles.removeAll(under: directory) }
        var seeds: [[UInt8]] = []
        for ending in ["inPlace", "faststart", "crash"] {
            MemoryFiles.removeAll(under: directory)
            var configuration = configuration()
            configuration.fragmentDuration = 100_000_000
            if ending == "faststart" { configuration.finalizeMode = .faststart }
            guard let muxer = try? MP4Muxer(configuration: configuration), (try? muxer.start()) != nil else { continue }
            var sequence: UInt64 = 0
            for i in 0 ..< 12 {
                for track in [UInt32(1), 2] {
                    sequence += 1
                    let isVideo = track == 1
                    let sample = SessionScript.Sample(trackID: track, sequence: sequence, pts: SessionScript.startTime + Int64(i) * 33_000_000,
                                                      dts: SessionScript.startTime + Int64(i) * 33_000_000, duration: 33_000_000,
                                                      keyframe: i % 4 == 0, payload: isVideo ? (i % 4 == 0 ? .idr : .slice) : .raw, size: 24)
                    _ = try? muxer.append(MuxerSample(trackID: track, sequence: sequence, pts: sample.pts, dts: sample.dts,
                                                      duration: sample.duration, isKeyframe: sample.keyframe,
                                                      data: SessionDrive.payload(sample, video: isVideo)))
                }
            }
            if ending == "crash" { muxer.suspend() } else { _ = try? muxer.finish() }
            let path = configuration.path(forSegment: 0)
            guard let file = try? RandomAccessFile(path: path, mode: .readOnly), let size = try? file.size(),
                  let bytes = try? file.read(count: Int(size), at: 0) else { continue }
            seeds.append(bytes)
        }
        return seeds
    }

    static func write(_ bytes: [UInt8], to path: String) {
        MemoryFiles.remove(path)
        guard let file = try? RandomAccessFile(path: path, mode: .createNew(mode: 0o600)) else { return }
        try? file.write(bytes, at: 0)
    }
}

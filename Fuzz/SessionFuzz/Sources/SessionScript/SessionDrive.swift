#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import MP4

/// What stands between the agent and the muxer: nothing (the muxer as a library, driven with
/// any value) or the server's session validator (Fuzz/SessionFuzz).
public protocol SessionGate {
    /// Whether the sample reaches the muxer.
    mutating func sample(_ sample: SessionScript.Sample) -> SessionDrive.Verdict
    mutating func trackEnd(trackID: UInt32) -> SessionDrive.Verdict
    /// A new connection resumes the session; the muxer holds everything through `durableThrough`.
    mutating func reconnect(durableThrough: UInt64) -> SessionDrive.Verdict
    /// What the muxer answered for a sample the gate passed (nil: accepted).
    mutating func muxed(_ sample: SessionScript.Sample, error: MuxerError?) -> [String]
}

/// Passes everything straight to the muxer.
public struct OpenGate: SessionGate {
    public init() {}
    public func sample(_ sample: SessionScript.Sample) -> SessionDrive.Verdict { .pass }
    public func trackEnd(trackID: UInt32) -> SessionDrive.Verdict { .pass }
    public func reconnect(durableThrough: UInt64) -> SessionDrive.Verdict { .pass }
    public func muxed(_ sample: SessionScript.Sample, error: MuxerError?) -> [String] { [] }
}

/// Runs a ``SessionScript`` against ``MP4Muxer``, ``MP4Recovery``, ``MP4FileScanner`` and
/// ``MP4Inspection`` in one directory (tmpfs in the fuzzer), and checks what can be checked:
/// - nothing traps, whatever the timestamps (the fuzzer's oracle);
/// - a finished recording's files hold exactly the samples the muxer accepted, read back;
/// - a finished file is a regular MP4 (recovery finds nothing to do);
/// - each file a crash left behind is recovered or refused with an error, never a trap.
/// Every file is removed afterwards.
public enum SessionDrive {
    public enum Verdict: Sendable { case pass, drop, endSession }

    public struct Outcome: Sendable {
        /// Samples the muxer took (not refused, not a duplicate).
        public var appended = 0
        /// Why the muxer refused samples, by code.
        public var refusals: [MuxerError.Code] = []
        /// Samples in the finished files, read back.
        public var samplesInFiles: Int?
        public var recovered: [String] = []
        /// Violated expectations (empty when all is well).
        public var violations: [String] = []
    }

    public static func run<Gate: SessionGate>(_ script: SessionScript, directory: String, baseName: String, gate: inout Gate) -> Outcome {
        var outcome = Outcome()
        var configuration = MuxerConfiguration(tracks: script.tracks.map(trackConfiguration), directory: directory, baseName: baseName,
                                               creationTime: 1_700_000_000)
        configuration.durability = script.syncWhenAsked ? .fsyncWhenAsked : .none
        configuration.finalizeMode = script.faststart ? .faststart : .inPlace
        configuration.maxSegmentDuration = script.segmentDuration
        configuration.maxSegmentBytes = script.segmentBytes
        configuration.fragmentDuration = script.fragmentDuration
        configuration.stallTimeout = script.stallTimeout
        configuration.maxQueuedBytesPerTrack = script.maxQueuedBytesPerTrack
        defer { removeFiles(configuration) }

        guard var muxer = try? MP4Muxer(configuration: configuration) else { return outcome }
        guard (try? muxer.start()) != nil else { return outcome }
        var rejectedInFile = 0
        var interrupted = false
        loop: for operation in script.operations {
            switch operation {
            case .sample(let s):
                switch gate.sample(s) {
                case .drop: continue
                case .endSession: break loop
                case .pass: break
                }
                var refusal: MuxerError?
                do {
                    let events = try muxer.append(MuxerSample(trackID: s.trackID, sequence: s.sequence, pts: s.pts, dts: s.dts,
                                                              duration: s.duration, isKeyframe: s.keyframe,
                                                              data: payload(s, video: isVideo(s.trackID, script))))
                    if !events.contains(where: { if case .duplicateIgnored = $0 { true } else { false } }) { outcome.appended += 1 }
                    rejectedInFile += rejectedCount(events)
                    if script.syncWhenAsked, s.sequence % 3 == 0, muxer.hasUnsyncedFragments {
                        outcome.violations += syncWritten(muxer)
                    }
                } catch {
                    refusal = error
                    outcome.refusals.append(error.code)
                }
                outcome.violations += gate.muxed(s, error: refusal)
            case .trackEnd(let id):
                guard gate.trackEnd(trackID: id) == .pass else { break loop }
                if let events = try? muxer.endTrack(id) { rejectedInFile += rejectedCount(events) }
            case .reconnect:
                muxer.suspend()
                interrupted = true
                guard let (resumed, _) = try? MP4Muxer.resume(configuration: configuration) else { return outcome }
                muxer = resumed
                guard gate.reconnect(durableThrough: muxer.durableThroughSequence) == .pass else { break loop }
            case .crash(let damage):
                muxer.suspend()
                for path in existingFiles(configuration) {
                    damageFile(path, damage)
                    if (try? MP4Recovery.recover(path: path)) != nil { outcome.recovered.append(path) }
                    _ = try? MP4Inspection.inspect(path: path)
                }
                return outcome
            case .finish:
                break loop
            }
        }
        guard muxer.status == .running, let summary = try? muxer.finish() else { return outcome }
        rejectedInFile += rejectedCount(summary.events)
        var inFiles = 0
        for segment in summary.segments {
            guard let inspection = try? MP4Inspection.inspect(path: segment.path) else {
                outcome.violations.append("\(segment.path): a finished file cannot be inspected")
                continue
            }
            let count = inspection.tracks.reduce(0) { $0 + $1.sampleCount }
            if count != segment.tracks.reduce(0, { $0 + $1.sampleCount }) {
                outcome.violations.append("\(segment.path): the muxer reports other sample counts than the file holds")
            }
            inFiles += count
            if (try? MP4Recovery.recover(path: segment.path))?.alreadyFinalized != true {
                outcome.violations.append("\(segment.path): a finished file is not a finalized MP4")
            }
        }
        outcome.samplesInFiles = inFiles
        // Without an interruption nothing may be lost: every accepted sample is in a file,
        // or was reported rejected while routing (it predated the file's origin).
        if !interrupted, inFiles + rejectedInFile != outcome.appended {
            outcome.violations.append("\(outcome.appended) samples accepted, \(rejectedInFile) rejected, \(inFiles) in the files")
        }
        return outcome
    }

    /// The server's sync after a read cycle: every written fragment reported durable once, in
    /// order, and nothing left waiting. A failed sync fails the muxer (an I/O error, which a
    /// memory file does not raise); the drive then stops, as the server's session would.
    static func syncWritten(_ muxer: MP4Muxer) -> [String] {
        let before = muxer.durableThroughSequence
        guard let events = try? muxer.syncWrittenFragments() else { return [] }
        var violations: [String] = []
        if muxer.hasUnsyncedFragments { violations.append("fragments still wait after syncWrittenFragments()") }
        if muxer.durableThroughSequence < before { violations.append("the ack point went back at a sync") }
        var last = before
        for case .fragmentDurable(let report) in events {
            if report.durableThroughSequence < last { violations.append("a sync reported an ack point below an earlier one") }
            last = report.durableThroughSequence
        }
        return violations
    }

    static func rejectedCount(_ events: [MuxerEvent]) -> Int {
        events.filter { if case .sampleRejected = $0 { true } else { false } }.count
    }

    static func isVideo(_ trackID: UInt32, _ script: SessionScript) -> Bool {
        script.tracks.first { $0.id == trackID }?.isVideo ?? true
    }

    static func trackConfiguration(_ track: SessionScript.Track) -> TrackConfiguration {
        TrackConfiguration(id: track.id, label: track.isVideo ? "cam\(track.id)" : "mic\(track.id)",
                           codec: track.isVideo ? .h264(sps: sps, pps: pps) : .opus(OpusHead(channelCount: 2, preSkip: 312)))
    }

    /// x264, High profile 1280x720 (as in MP4Tests' fixtures).
    static let sps: [UInt8] = [0x67, 0x64, 0x00, 0x1F, 0xAC, 0xD9, 0x40, 0x50, 0x05, 0xBB, 0x01, 0x10, 0x00, 0x00, 0x03, 0x00,
                               0x10, 0x00, 0x00, 0x03, 0x03, 0xC0, 0xF1, 0x83, 0x19, 0x60]
    static let pps: [UInt8] = [0x68, 0xEB, 0xE3, 0xCB, 0x22, 0xC0]

    static func lengthPrefixed(_ nal: [UInt8]) -> [UInt8] {
        let n = UInt32(nal.count)
        return [UInt8(n >> 24), UInt8(truncatingIfNeeded: n >> 16), UInt8(truncatingIfNeeded: n >> 8), UInt8(truncatingIfNeeded: n)] + nal
    }

    static func payload(_ s: SessionScript.Sample, video: Bool) -> [UInt8] {
        let filler = (0..<s.size).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 0x11) }
        guard video else { return s.payload == .empty ? [] : filler }
        switch s.payload {
        case .idr: return lengthPrefixed([0x65] + filler)
        case .slice: return lengthPrefixed([0x41] + filler)
        case .annexBIDR: return [0, 0, 0, 1, 0x65] + filler
        case .parameterSetsAndIDR: return lengthPrefixed(sps) + lengthPrefixed(pps) + lengthPrefixed([0x65] + filler)
        case .differingSPS: return lengthPrefixed(sps.dropLast() + [0x61]) + lengthPrefixed([0x65] + filler)
        case .raw: return filler
        case .empty: return []
        case .lengthPastEnd: return [0, 0, 0xFF, 0xFF, 0x65] + filler
        }
    }

    static func existingFiles(_ configuration: MuxerConfiguration) -> [String] {
        var paths: [String] = []
        for k in 0..<1024 {
            let path = configuration.path(forSegment: k)
            guard RandomAccessFile.exists(path) else { break }
            paths.append(path)
        }
        return paths
    }

    static func removeFiles(_ configuration: MuxerConfiguration) {
        for k in 0..<1024 {
            let path = configuration.path(forSegment: k)
            let existed = RandomAccessFile.exists(path)
            RandomAccessFile.remove(path)
            RandomAccessFile.remove(path + ".faststart.tmp")
            if !existed, k > 0 { break }
        }
    }

    /// Overwrites single bytes of a file: a damaged disk, for the reader and recovery.
    static func damageFile(_ path: String, _ damage: [(offset: UInt64, byte: UInt8)]) {
        guard !damage.isEmpty else { return }
        if MemoryFiles.contains(path) {
            for d in damage { MemoryFiles.damage(path, at: d.offset, byte: d.byte) }
            return
        }
        let fd = open(path, O_WRONLY)
        guard fd >= 0 else { return }
        defer { close(fd) }
        for d in damage {
            var b = d.byte
            _ = pwrite(fd, &b, 1, off_t(d.offset))
        }
    }
}

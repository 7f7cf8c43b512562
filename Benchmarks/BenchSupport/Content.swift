#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import MediaEncoding
import RecordCtlCore
import Shared

/// Tracks and samples in send order (what `SyntheticRecording` yields; its memberwise init is
/// internal, so the cache rebuilds this instead).
public struct Recording {
    public var tracks: [TrackConfiguration]
    public var samples: [MuxerSample]
}

/// What is muxed: N seconds of two H.264 cameras plus one Opus microphone, encoded once with
/// real x264 (ultrafast) and libopus by `SyntheticRecording`, then held in memory.
public struct BenchContent {
    public var seconds: Int
    public var width: Int
    public var height: Int
    public var fps: Int
    public var preset: String
    /// Average video bitrate per camera in kbit/s; nil = x264's CRF 23.
    public var videoKbps: Int?
    public var clockBase: Int64
    public var recording: Recording

    public static let clockBase: Int64 = 1_000_000_000_000

    public var cacheKey: String {
        "content-v1-\(seconds)s-2x\(width)x\(height)p\(fps)-\(preset)\(videoKbps.map { "-\($0)kbps" } ?? "")-opus-mono"
    }

    /// Payload bytes of all samples.
    public var payloadBytes: Int { recording.samples.reduce(0) { $0 + $1.data.count } }

    /// The samples whose decode time lies in the first `prefix` seconds.
    public func samples(prefix: Int) -> ArraySlice<MuxerSample> {
        let limit = clockBase + Int64(prefix) * 1_000_000_000
        let end = recording.samples.firstIndex { $0.dts >= limit } ?? recording.samples.endIndex
        return recording.samples[..<end]
    }

    /// Loads the content from the cache, or encodes it (and stores it there).
    public static func load(seconds: Int, width: Int, height: Int, fps: Int, preset: String, videoKbps: Int? = nil,
                            cacheDirectory: String?) throws -> BenchContent {
        var content = BenchContent(seconds: seconds, width: width, height: height, fps: fps, preset: preset, videoKbps: videoKbps,
                                   clockBase: clockBase,
                                   recording: Recording(tracks: [], samples: []))
        let cachePath = cacheDirectory.map { $0 + "/" + content.cacheKey + ".bin" }
        if let cachePath, let recording = ContentCache.read(path: cachePath) {
            progress("content: loaded \(recording.samples.count) samples from cache \(cachePath)")
            content.recording = recording
            return content
        }
        progress("content: encoding \(seconds) s of 2×\(width)x\(height)@\(fps) H.264 (x264 \(preset)) + Opus; takes a while, cached afterwards")
        let t0 = monotonicNanos()
        let generated = try SyntheticRecording.generate(
            seconds: Double(seconds),
            videos: [.init(label: "front", width: width, height: height, fps: fps),
                     .init(label: "back", width: width, height: height, fps: fps)],
            audio: .init(label: "mic"), clockBase: clockBase, preset: preset,
            rateControl: videoKbps.map { .bitrate(kbps: $0) } ?? .crf(23))
        content.recording = Recording(tracks: generated.tracks, samples: generated.samples)
        progress("content: encoded \(content.recording.samples.count) samples in \(format(elapsed(from: t0, to: monotonicNanos()), 1)) s")
        if let cacheDirectory, let cachePath {
            do {
                try makeDirectory(cacheDirectory)
                try ContentCache.write(content.recording, path: cachePath)
                progress("content: cached to \(cachePath)")
            } catch {
                progress("content: could not cache (\(error)); continuing")
            }
        }
        return content
    }
}

/// A little-endian, length-prefixed dump of a `SyntheticRecording`. Private to this benchmark;
/// a version bump in the magic invalidates old files.
public enum ContentCache {
    public static let magic = Array("MUXBENCH-CONTENT-1\n".utf8)

    struct Writer {
        var bytes: [UInt8] = []
        mutating func int<T: FixedWidthInteger>(_ v: T) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
        mutating func blob(_ b: [UInt8]) {
            int(UInt32(b.count))
            bytes.append(contentsOf: b)
        }
    }

    struct Reader {
        let bytes: [UInt8]
        var at = 0
        mutating func int<T: FixedWidthInteger>(_: T.Type = T.self) throws -> T {
            let n = MemoryLayout<T>.size
            guard at + n <= bytes.count else { throw BenchError("truncated cache") }
            var v: T = 0
            for i in 0..<n { v |= T(truncatingIfNeeded: bytes[at + i]) << (8 * i) }
            at += n
            return v
        }
        mutating func blob() throws -> [UInt8] {
            let n = Int(try int(UInt32.self))
            guard at + n <= bytes.count else { throw BenchError("truncated cache") }
            defer { at += n }
            return Array(bytes[at..<at + n])
        }
    }

    public static func write(_ recording: Recording, path: String) throws {
        var w = Writer()
        w.bytes = magic
        w.int(UInt32(recording.tracks.count))
        for t in recording.tracks {
            w.int(t.id)
            w.blob(Array(t.label.utf8))
            w.int(Int32(t.rotation))
            switch t.codec {
            case let .h264(sps, pps):
                w.int(UInt8(0))
                w.blob(sps)
                w.blob(pps)
            case let .opus(head):
                w.int(UInt8(1))
                w.blob(head.bytes)
            case let .unsupported(name):
                throw UnsupportedCodecError(codec: name, place: "the bench content file")
            }
        }
        let payload = recording.samples.reduce(0) { $0 + $1.data.count }
        w.bytes.reserveCapacity(w.bytes.count + payload + recording.samples.count * 45)
        w.int(UInt64(recording.samples.count))
        for s in recording.samples {
            w.int(s.trackID)
            w.int(s.sequence)
            w.int(s.pts)
            w.int(s.dts)
            w.int(s.duration)
            w.int(UInt8(s.isKeyframe ? 1 : 0))
            w.blob(s.data)
        }
        let temp = path + ".tmp-\(getpid())"
        RandomAccessFile.remove(temp)
        let file = try RandomAccessFile(path: temp, mode: .createNew(mode: 0o644))
        try file.write(w.bytes, at: 0)
        file.close()
        try RandomAccessFile.rename(temp, to: path)
    }

    public static func read(path: String) -> Recording? {
        guard let file = try? RandomAccessFile(path: path, mode: .readOnly), let size = try? file.size(),
              let bytes = try? file.read(count: Int(size), at: 0) else { return nil }
        do {
            var r = Reader(bytes: bytes)
            guard bytes.count >= magic.count, Array(bytes[0..<magic.count]) == magic else { return nil }
            r.at = magic.count
            var tracks: [TrackConfiguration] = []
            for _ in 0..<(try r.int(UInt32.self)) {
                let id = try r.int(UInt32.self)
                let label = String(decoding: try r.blob(), as: UTF8.self)
                let rotation = Int(try r.int(Int32.self))
                let kind = try r.int(UInt8.self)
                let codec: TrackConfiguration.Codec
                if kind == 0 {
                    let sps = try r.blob()
                    codec = .h264(sps: sps, pps: try r.blob())
                } else {
                    codec = .opus(try OpusHead(bytes: try r.blob()))
                }
                tracks.append(TrackConfiguration(id: id, label: label, codec: codec, rotation: rotation))
            }
            let count = Int(try r.int(UInt64.self))
            var samples: [MuxerSample] = []
            samples.reserveCapacity(count)
            for _ in 0..<count {
                let trackID = try r.int(UInt32.self)
                let sequence = try r.int(UInt64.self)
                let pts = try r.int(Int64.self)
                let dts = try r.int(Int64.self)
                let duration = try r.int(Int64.self)
                let key = try r.int(UInt8.self) != 0
                samples.append(MuxerSample(trackID: trackID, sequence: sequence, pts: pts, dts: dts, duration: duration,
                                           isKeyframe: key, data: try r.blob()))
            }
            guard r.at == bytes.count else { return nil }
            return Recording(tracks: tracks, samples: samples)
        } catch {
            return nil
        }
    }
}

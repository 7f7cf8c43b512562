/// A recording session decoded from fuzz input (docs/protocol.md §11 "Fuzzing"): the tracks,
/// the muxer settings, and a sequence of operations: samples with structured or extreme
/// timestamps, track ends, reconnects (suspend + resume), a crash (recovery of the files,
/// optionally damaged) or a clean finish. Every byte string decodes to some script, and a
/// script is short (at most ``maxOperations``), so running one is fast and bounded.
///
/// Shared by the libFuzzer target (Fuzz/SessionFuzz) and the regression replay in MP4Tests,
/// which compiles this folder through a symlink.
public struct SessionScript: Sendable {
    public struct Track: Sendable, Equatable {
        public var id: UInt32
        public var isVideo: Bool
    }

    public enum PayloadKind: UInt8, Sendable {
        case idr, slice, annexBIDR, parameterSetsAndIDR, differingSPS, raw, empty, lengthPastEnd
    }

    public struct Sample: Sendable, Equatable {
        public var trackID: UInt32
        public var sequence: UInt64
        public var pts: Int64
        public var dts: Int64
        public var duration: Int64
        public var keyframe: Bool
        public var payload: PayloadKind
        public var size: Int
    }

    public enum Operation: Sendable, Equatable {
        case sample(Sample)
        case trackEnd(trackID: UInt32)
        /// The connection drops: the muxer is suspended and resumed from its files.
        case reconnect
        /// The process dies: the files are recovered as they are, after `damage` (offset, byte) writes.
        case crash(damage: [(offset: UInt64, byte: UInt8)])
        case finish

        public static func == (a: Self, b: Self) -> Bool {
            switch (a, b) {
            case let (.sample(x), .sample(y)): x == y
            case let (.trackEnd(x), .trackEnd(y)): x == y
            case (.reconnect, .reconnect), (.finish, .finish): true
            case let (.crash(x), .crash(y)): x.map(\.offset) == y.map(\.offset) && x.map(\.byte) == y.map(\.byte)
            default: false
            }
        }
    }

    public static let maxOperations = 96
    /// Where an agent's monotonic clock plausibly is: 1000 s after boot.
    public static let startTime: Int64 = 1_000_000_000_000

    public var tracks: [Track]
    /// Drive the muxer through the protocol's session validator (else: straight).
    public var throughValidator: Bool
    /// The agent's Hello offers the `resume` capability.
    public var resumeCapability: Bool
    public var faststart: Bool
    public var segmentDuration: Int64?
    public var segmentBytes: Int?
    public var fragmentDuration: Int64
    public var stallTimeout: Int64
    public var maxQueuedBytesPerTrack: Int
    /// The record-server's durability: fragments are written at once and made durable by
    /// `syncWrittenFragments()`, which the drive calls after every third sequence number.
    public var syncWhenAsked: Bool
    public var operations: [Operation] = []

    /// Timestamps worth trying: the limits of Int64, of the protocol's bounds (2^62, 10 s,
    /// 2^40 from the first dts) and of the muxer's (2^40, 2^42), and just past each.
    public static let interesting: [Int64] = [
        0, 1, -1, .min, .min + 1, .min + 1_000_000_000, .max, .max - 1, .max - 1_000_000_000,
        1 << 62, (1 << 62) - 1, -(1 << 62), -(1 << 62) - 1, 1 << 40, (1 << 40) + 1, 1 << 42, (1 << 42) + 1,
        10_000_000_000, 10_000_000_001, -10_000_000_000, startTime + (1 << 40), startTime + (1 << 40) + 1,
        startTime - (1 << 40) - 1, startTime + (1 << 42) + 1, startTime - (1 << 42) - 1, 1 << 32, .max - (1 << 20),
        Int64(Int32.max) * 11_111, startTime, startTime - 1,
    ]

    public init(_ bytes: [UInt8]) {
        var r = FuzzBytes(bytes)
        let flags = r.byte()
        throughValidator = flags & 1 != 0
        resumeCapability = flags & 2 != 0
        faststart = flags & 4 != 0
        segmentDuration = flags & 8 != 0 ? [1, 40_000_000, 1_000_000_000][Int(r.byte()) % 3] : nil
        segmentBytes = flags & 16 != 0 ? [1, 600, 4096][Int(r.byte()) % 3] : nil
        maxQueuedBytesPerTrack = flags & 32 != 0 ? 64 : 64 << 20
        fragmentDuration = flags & 64 != 0 ? [1, 33_000_000, 1 << 40][Int(r.byte()) % 3] : 1_000_000_000
        stallTimeout = [500_000_000, 1, 40_000_000, 1 << 40][Int(r.byte()) % 4]
        let layout = r.byte()
        // The layout byte's top bit, which the track counts below hardly use, so that the
        // corpus written before this flag keeps its track layouts.
        syncWhenAsked = layout & 0x80 != 0
        let videos = Int(layout % 3)
        let audios = Int(layout / 3 % 3)
        tracks = (0..<videos).map { Track(id: UInt32($0 + 1), isVideo: true) }
            + (0..<audios).map { Track(id: UInt32(videos + $0 + 1), isVideo: false) }
        if tracks.isEmpty { tracks = [Track(id: 1, isVideo: flags & 128 == 0)] }

        var sequence: UInt64 = 0
        var lastDTS = Array(repeating: Self.startTime, count: tracks.count)
        while !r.isAtEnd, operations.count < Self.maxOperations {
            let op = r.byte()
            switch op % 16 {
            case 12:
                let t = Int(r.byte()) % (tracks.count + 1)
                operations.append(.trackEnd(trackID: t < tracks.count ? tracks[t].id : 99))
            case 13:
                operations.append(.reconnect)
            case 14:
                let n = Int(r.byte() % 4)
                let damage = (0..<n).map { _ in (offset: UInt64(r.u16()), byte: r.byte()) }
                operations.append(.crash(damage: damage))
                return
            case 15:
                operations.append(.finish)
                return
            default:
                let pick = r.byte()
                let t = Int(pick) % tracks.count
                let mode = r.byte()
                var dts: Int64
                switch mode & 3 {
                case 0: dts = lastDTS[t] &+ Int64(r.u16()) &* 1000 &+ 1
                case 1: dts = Self.interesting[Int(r.byte()) % Self.interesting.count]
                case 2: dts = r.i64()
                default: dts = lastDTS[t] &- Int64(r.u16()) &* 1000
                }
                let pts: Int64
                switch mode >> 2 & 3 {
                case 0: pts = dts
                case 1: pts = dts &+ Int64(r.u16()) &* 100_000
                case 2: pts = Self.interesting[Int(r.byte()) % Self.interesting.count]
                default: pts = r.i64()
                }
                let duration: Int64
                switch mode >> 4 & 3 {
                case 0: duration = 0
                case 1: duration = Int64(r.u16()) &* 1000
                case 2: duration = Self.interesting[Int(r.byte()) % Self.interesting.count]
                default: duration = r.i64()
                }
                // Mostly the next sequence number; sometimes a repeat, a gap or a step back.
                if mode & 128 != 0 {
                    sequence = [max(1, sequence), sequence + 2, max(1, sequence - min(sequence, 1)), sequence + 1000][Int(r.byte() % 4)]
                } else {
                    sequence += 1
                }
                let kind = r.byte()
                lastDTS[t] = dts
                operations.append(.sample(Sample(
                    trackID: pick >= 0xF0 ? 99 : tracks[t].id, sequence: sequence, pts: pts, dts: dts, duration: duration,
                    keyframe: mode & 64 != 0, payload: PayloadKind(rawValue: kind & 7)!, size: Int(kind >> 3) + 1)))
            }
        }
    }
}

/// Reads fuzz input; past the end every read gives zeros, so any input decodes.
struct FuzzBytes {
    private let bytes: [UInt8]
    private var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { index >= bytes.count }

    mutating func byte() -> UInt8 {
        guard index < bytes.count else { return 0 }
        defer { index += 1 }
        return bytes[index]
    }

    mutating func u16() -> UInt16 { UInt16(byte()) << 8 | UInt16(byte()) }

    mutating func i64() -> Int64 {
        var v: UInt64 = 0
        for _ in 0..<8 { v = v << 8 | UInt64(byte()) }
        return Int64(bitPattern: v)
    }
}

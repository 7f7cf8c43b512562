/// Every bound the codec enforces, in one place (protocol.md §9 "Limits").
///
/// The defaults are also the protocol *ceilings*: a peer may announce lower values
/// (the server does so in ``HelloReply/limits``) but never higher ones. Every length
/// field read from the wire is checked against one of these values before any
/// memory is reserved for it, so a hostile peer cannot make us allocate more than
/// `maxFramePayload` bytes per frame.
public struct ProtocolLimits: Sendable, Equatable, Hashable {
    /// Size of the fixed frame header in bytes (§3).
    public static let frameHeaderSize = 12
    /// The absolute ceiling for a frame payload: 8 MiB.
    public static let ceilingFramePayload = 8 * 1024 * 1024
    /// Identifiers (agent id, session id, label keys) are 1...64 ASCII bytes (§4.3).
    public static let maxIdentifierBytes = 64

    /// Largest accepted frame payload in bytes (default and ceiling 8 MiB).
    public var maxFramePayload: Int
    /// Largest number of tracks in one session (default and ceiling 16).
    public var maxTracksPerSession: Int
    /// Largest number of labels in one label set (default and ceiling 32).
    public var maxLabels: Int
    /// Largest UTF-8 string field (label values, track labels, messages, versions) in bytes
    /// (default and ceiling 1024).
    public var maxStringBytes: Int
    /// Largest bearer token in bytes (default and ceiling 4096).
    public var maxTokenBytes: Int
    /// Largest codec configuration blob of one track in bytes (default and ceiling 64 KiB).
    public var maxCodecConfigBytes: Int
    /// Largest number of SPS (and, separately, PPS) in an H.264 configuration
    /// (default and ceiling 32, the H.264 maximum for SPS ids).
    public var maxParameterSets: Int

    public init(
        maxFramePayload: Int = ProtocolLimits.ceilingFramePayload,
        maxTracksPerSession: Int = 16,
        maxLabels: Int = 32,
        maxStringBytes: Int = 1024,
        maxTokenBytes: Int = 4096,
        maxCodecConfigBytes: Int = 64 * 1024,
        maxParameterSets: Int = 32
    ) {
        self.maxFramePayload = maxFramePayload
        self.maxTracksPerSession = maxTracksPerSession
        self.maxLabels = maxLabels
        self.maxStringBytes = maxStringBytes
        self.maxTokenBytes = maxTokenBytes
        self.maxCodecConfigBytes = maxCodecConfigBytes
        self.maxParameterSets = maxParameterSets
    }

    /// The defaults, which are also the protocol ceilings.
    public static let `default` = ProtocolLimits()

    /// Whether every value is within `1...ceiling`.
    public var isWithinCeilings: Bool {
        let c = ProtocolLimits.default
        return (1...c.maxFramePayload).contains(maxFramePayload)
            && (1...c.maxTracksPerSession).contains(maxTracksPerSession)
            && (0...c.maxLabels).contains(maxLabels)
            && (1...c.maxStringBytes).contains(maxStringBytes)
            && (1...c.maxTokenBytes).contains(maxTokenBytes)
            && (1...c.maxCodecConfigBytes).contains(maxCodecConfigBytes)
            && (1...c.maxParameterSets).contains(maxParameterSets)
    }

    /// These limits lowered to what a server announced (never raised).
    public func applying(_ announced: AnnouncedLimits) -> ProtocolLimits {
        var l = self
        l.maxFramePayload = min(l.maxFramePayload, Int(announced.maxFramePayload))
        l.maxTracksPerSession = min(l.maxTracksPerSession, Int(announced.maxTracksPerSession))
        l.maxLabels = min(l.maxLabels, Int(announced.maxLabels))
        l.maxStringBytes = min(l.maxStringBytes, Int(announced.maxStringBytes))
        l.maxCodecConfigBytes = min(l.maxCodecConfigBytes, Int(announced.maxCodecConfigBytes))
        return l
    }

    /// The subset of these limits a server announces in ``HelloReply``.
    public var announced: AnnouncedLimits {
        AnnouncedLimits(
            maxFramePayload: UInt32(clamping: maxFramePayload),
            maxTracksPerSession: UInt8(clamping: maxTracksPerSession),
            maxLabels: UInt8(clamping: maxLabels),
            maxStringBytes: UInt16(clamping: maxStringBytes),
            maxCodecConfigBytes: UInt32(clamping: maxCodecConfigBytes)
        )
    }
}

/// The limits a server announces to the agent in ``HelloReply`` (protocol.md §6.2).
/// Each value must be between 1 (0 for `maxLabels`) and the protocol ceiling.
public struct AnnouncedLimits: Sendable, Equatable, Hashable {
    public var maxFramePayload: UInt32
    public var maxTracksPerSession: UInt8
    public var maxLabels: UInt8
    public var maxStringBytes: UInt16
    public var maxCodecConfigBytes: UInt32

    public init(
        maxFramePayload: UInt32, maxTracksPerSession: UInt8, maxLabels: UInt8,
        maxStringBytes: UInt16, maxCodecConfigBytes: UInt32
    ) {
        self.maxFramePayload = maxFramePayload
        self.maxTracksPerSession = maxTracksPerSession
        self.maxLabels = maxLabels
        self.maxStringBytes = maxStringBytes
        self.maxCodecConfigBytes = maxCodecConfigBytes
    }

    /// Whether every value is within the protocol ceilings.
    public var isValid: Bool {
        let c = ProtocolLimits.default
        return (1...UInt32(c.maxFramePayload)).contains(maxFramePayload)
            && (1...UInt8(c.maxTracksPerSession)).contains(maxTracksPerSession)
            && maxLabels <= UInt8(c.maxLabels)
            && (1...UInt16(c.maxStringBytes)).contains(maxStringBytes)
            && (1...UInt32(c.maxCodecConfigBytes)).contains(maxCodecConfigBytes)
    }
}

/// The bounds on a ``Sample``'s timestamps (protocol.md §6.12), checked by
/// ``SessionValidator`` before a sample reaches the server's arithmetic. A sample outside
/// them is refused with `timestampOutOfRange` (session scope).
public enum SampleTimestampBounds {
    /// pts and dts are in `0..<timestampCeiling` nanoseconds (2^62: the agent's monotonic
    /// clock, never negative, with headroom for any sum of two timestamps).
    public static let timestampCeiling: Int64 = 1 << 62
    /// Largest `pts - dts` (reorder delay): 10 s. A sample is never presented before it is decoded.
    public static let maxPresentationDelay: Int64 = 10_000_000_000
    /// Largest `duration`: 10 s.
    public static let maxDuration: Int64 = 10_000_000_000
    /// Largest distance of a sample's dts from the session's first sample's dts, either
    /// direction: 2^40 ns (about 12.7 days).
    public static let maxSessionSpan: Int64 = 1 << 40

    /// Why the timestamps break a bound, or nil if they keep every one. `sessionFirstDTS` is
    /// the dts of the session's first sample, when there was one.
    public static func violation(pts: Int64, dts: Int64, duration: Int64, sessionFirstDTS: Int64?) -> String? {
        let range = 0..<timestampCeiling
        guard range.contains(pts), range.contains(dts) else {
            return "pts \(pts) and dts \(dts) must be in [0, 2^62) ns"
        }
        // Both are in [0, 2^62): the differences below cannot overflow.
        guard (0...maxPresentationDelay).contains(pts - dts) else {
            return "pts - dts = \(pts - dts) ns is outside [0, \(maxPresentationDelay)]"
        }
        guard (0...maxDuration).contains(duration) else {
            return "duration \(duration) ns is outside [0, \(maxDuration)]"
        }
        if let first = sessionFirstDTS {
            let (distance, overflow) = dts.subtractingReportingOverflow(first)
            guard !overflow, distance.magnitude <= UInt64(maxSessionSpan) else {
                return "dts \(dts) is more than 2^40 ns from the session's first dts \(first)"
            }
        }
        return nil
    }
}

/// A protocol violation or failure, as detected locally or reported by the peer
/// (protocol.md §8 "Errors").
///
/// Errors compare equal by ``code`` alone: the ``message`` is a human-readable
/// diagnostic that may change between releases.
public struct ProtocolError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The stable wire code.
    public var code: Code
    /// What the error ends: the session or the whole connection.
    public var scope: Scope
    /// A diagnostic for logs; never parsed.
    public var message: String

    /// An error with the code's default scope.
    public init(_ code: Code, _ message: String) {
        self.init(code, scope: code.defaultScope, message)
    }

    public init(_ code: Code, scope: Scope, _ message: String) {
        self.code = code
        self.scope = scope
        self.message = message
    }

    public static func == (lhs: ProtocolError, rhs: ProtocolError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    public var description: String { "\(code) (\(scope)): \(message)" }

    /// What an error ends (wire values in protocol.md §8).
    public enum Scope: UInt8, Sendable, Hashable {
        /// The session ends; the connection stays usable for other sessions.
        case session = 1
        /// The connection ends (and with it any open session, which may be resumed).
        case connection = 2
    }
}

extension ProtocolError {
    /// A stable error code, carried on the wire as a big-endian u16.
    /// Unknown codes received from a peer are kept as they are.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: UInt16
        public init(rawValue: UInt16) { self.rawValue = rawValue }

        // Framing (§3): the byte stream cannot be trusted any more.
        public static let badMagic = Code(rawValue: 0x0001)
        public static let unsupportedVersion = Code(rawValue: 0x0002)
        public static let unknownMessageType = Code(rawValue: 0x0003)
        public static let frameTooLarge = Code(rawValue: 0x0004)
        public static let reservedBitsSet = Code(rawValue: 0x0005)

        // Payload decoding (§4, §6).
        public static let truncatedField = Code(rawValue: 0x0010)
        public static let trailingBytes = Code(rawValue: 0x0011)
        public static let invalidUTF8 = Code(rawValue: 0x0012)
        public static let invalidIdentifier = Code(rawValue: 0x0013)
        public static let stringTooLong = Code(rawValue: 0x0014)
        public static let invalidField = Code(rawValue: 0x0015)
        public static let tooManyLabels = Code(rawValue: 0x0016)
        public static let duplicateLabel = Code(rawValue: 0x0017)
        public static let tooManyTracks = Code(rawValue: 0x0018)
        public static let duplicateTrack = Code(rawValue: 0x0019)
        public static let invalidTrackDescriptor = Code(rawValue: 0x001A)
        public static let codecConfigTooLarge = Code(rawValue: 0x001B)
        public static let invalidCodecConfig = Code(rawValue: 0x001C)

        // Connection state (§7.1).
        public static let handshakeRequired = Code(rawValue: 0x0020)
        public static let unexpectedMessage = Code(rawValue: 0x0021)
        public static let noCommonVersion = Code(rawValue: 0x0022)
        public static let authenticationFailed = Code(rawValue: 0x0023)

        // Session state (§7.2).
        public static let sessionAlreadyOpen = Code(rawValue: 0x0030)
        public static let noOpenSession = Code(rawValue: 0x0031)
        public static let sessionMismatch = Code(rawValue: 0x0032)
        public static let unknownTrack = Code(rawValue: 0x0033)
        public static let nonMonotonicSequence = Code(rawValue: 0x0034)
        public static let sequenceGap = Code(rawValue: 0x0035)
        public static let trackEnded = Code(rawValue: 0x0036)
        public static let unknownSession = Code(rawValue: 0x0037)
        public static let sessionBusy = Code(rawValue: 0x0038)
        public static let finalSequenceMismatch = Code(rawValue: 0x0039)
        /// A Sample's timestamps are outside the bounds of §6.12.
        public static let timestampOutOfRange = Code(rawValue: 0x003A)
        /// The server could not store a sample's content (§6.12, §8): the session ends before it.
        public static let sampleRefused = Code(rawValue: 0x003B)
        /// The agent cannot capture from a source (a camera or microphone that does not open):
        /// its answer to a StartSession it cannot carry out (§6.16). It ends nothing.
        public static let captureFailed = Code(rawValue: 0x003C)
        /// A track ended the session: the agent's `TrackEnd` reported an error and this server
        /// fails sessions on track errors (`failSessionOnTrackError`), or the server could not
        /// close the track's media (§6.13). The message names the track and the reason.
        public static let trackFailed = Code(rawValue: 0x003D)

        // Operational (sent by the server).
        public static let internalError = Code(rawValue: 0x0040)
        public static let storageFailure = Code(rawValue: 0x0041)
        public static let resourceExhausted = Code(rawValue: 0x0042)
        public static let shuttingDown = Code(rawValue: 0x0043)
        public static let idleTimeout = Code(rawValue: 0x0044)
        /// A frame did not complete within its deadline (§7.4, §9).
        public static let frameTooSlow = Code(rawValue: 0x0045)
        /// The server's budget for partly received frames is used up (§9); retry later.
        public static let budgetExhausted = Code(rawValue: 0x0046)

        /// Every code defined by this version, in wire order.
        public static let allDefined: [Code] = [
            .badMagic, .unsupportedVersion, .unknownMessageType, .frameTooLarge, .reservedBitsSet,
            .truncatedField, .trailingBytes, .invalidUTF8, .invalidIdentifier, .stringTooLong,
            .invalidField, .tooManyLabels, .duplicateLabel, .tooManyTracks, .duplicateTrack,
            .invalidTrackDescriptor, .codecConfigTooLarge, .invalidCodecConfig,
            .handshakeRequired, .unexpectedMessage, .noCommonVersion, .authenticationFailed,
            .sessionAlreadyOpen, .noOpenSession, .sessionMismatch, .unknownTrack,
            .nonMonotonicSequence, .sequenceGap, .trackEnded, .unknownSession, .sessionBusy,
            .finalSequenceMismatch, .timestampOutOfRange, .sampleRefused, .captureFailed, .trackFailed,
            .internalError, .storageFailure, .resourceExhausted, .shuttingDown, .idleTimeout,
            .frameTooSlow, .budgetExhausted,
        ]

        /// The scope an error with this code has unless the sender says otherwise.
        /// Malformed input and state confusion end the connection; problems that
        /// concern only one session's content end that session.
        public var defaultScope: Scope {
            switch self {
            case .unknownTrack, .nonMonotonicSequence, .sequenceGap, .trackEnded, .unknownSession,
                .sessionBusy, .finalSequenceMismatch, .timestampOutOfRange, .sampleRefused,
                .captureFailed, .trackFailed, .storageFailure, .resourceExhausted:
                return .session
            default:
                return .connection
            }
        }

        /// An agent's `Error` with this code answers a `StartSession`: it refuses that command
        /// and ends nothing, not even a session the agent records meanwhile (§6.5, §6.16).
        public var refusesCommandOnly: Bool { self == .sessionAlreadyOpen || self == .captureFailed }

        public var description: String {
            let names: [UInt16: String] = [
                0x0001: "badMagic", 0x0002: "unsupportedVersion", 0x0003: "unknownMessageType",
                0x0004: "frameTooLarge", 0x0005: "reservedBitsSet", 0x0010: "truncatedField",
                0x0011: "trailingBytes", 0x0012: "invalidUTF8", 0x0013: "invalidIdentifier",
                0x0014: "stringTooLong", 0x0015: "invalidField", 0x0016: "tooManyLabels",
                0x0017: "duplicateLabel", 0x0018: "tooManyTracks", 0x0019: "duplicateTrack",
                0x001A: "invalidTrackDescriptor", 0x001B: "codecConfigTooLarge",
                0x001C: "invalidCodecConfig", 0x0020: "handshakeRequired", 0x0021: "unexpectedMessage",
                0x0022: "noCommonVersion", 0x0023: "authenticationFailed", 0x0030: "sessionAlreadyOpen",
                0x0031: "noOpenSession", 0x0032: "sessionMismatch", 0x0033: "unknownTrack",
                0x0034: "nonMonotonicSequence", 0x0035: "sequenceGap", 0x0036: "trackEnded",
                0x0037: "unknownSession", 0x0038: "sessionBusy", 0x0039: "finalSequenceMismatch",
                0x003A: "timestampOutOfRange", 0x003B: "sampleRefused", 0x003C: "captureFailed", 0x003D: "trackFailed",
                0x0040: "internalError", 0x0041: "storageFailure", 0x0042: "resourceExhausted",
                0x0043: "shuttingDown", 0x0044: "idleTimeout", 0x0045: "frameTooSlow",
                0x0046: "budgetExhausted",
            ]
            let hex = String(rawValue, radix: 16, uppercase: true)
            let padded = String(repeating: "0", count: max(0, 4 - hex.count)) + hex
            return "\(names[rawValue] ?? "unknown")(0x\(padded))"
        }
    }
}

extension ProtocolError {
    static func truncated(_ field: StaticString) -> ProtocolError {
        ProtocolError(.truncatedField, "truncated field \(field)")
    }
    static func invalid(_ field: StaticString, _ detail: String) -> ProtocolError {
        ProtocolError(.invalidField, "invalid field \(field): \(detail)")
    }
}

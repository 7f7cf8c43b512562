/// Why the muxer refused a call or stopped. Misuse errors (`unknownTrack`, `decodeTimeWentBackwards`,
/// `sampleTooLarge`, …) reject one call and leave the recording running and intact; `io`
/// errors fail the recording but keep everything already written recoverable.
public struct MuxerError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        case invalidConfiguration
        case notRunning
        case unknownTrack
        case trackEnded
        case decodeTimeWentBackwards
        case presentationBeforeDecode
        case sampleTooLarge
        case emptySample
        case malformedSample
        case codecConfigurationChanged
        case sampleBeforeRecordingStart
        /// A sample's times are outside ``MuxerTimestampBounds``.
        case timestampOutOfRange
        case io
        case noCompleteFragment
        case alreadyFinalized
        case notOurFile
        /// A track's codec has no rules in the muxer (``TrackConfiguration/Codec/unsupported(_:)``).
        case unsupportedCodec
    }

    public let code: Code
    public let message: String
    /// The errno of an I/O failure (ENOSPC for a full disk), when there is one.
    public let errno: Int32?

    public init(_ code: Code, _ message: String, errno: Int32? = nil) {
        self.code = code
        self.message = message
        self.errno = errno
    }

    public var description: String { "\(code.rawValue): \(message)" }

    public static func == (a: Self, b: Self) -> Bool { a.code == b.code }
}

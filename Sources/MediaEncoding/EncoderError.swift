/// Error thrown by ``H264Encoder`` and ``OpusEncoder``.
public struct EncoderError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Code: Equatable, Sendable {
        /// The library refused to create an encoder with otherwise valid settings.
        case openFailed
        /// A setting is out of range or unknown to the library (preset, tune, profile, rate, ...).
        case invalidSettings
        /// The library returned this error code while encoding.
        case encodeFailed(Int32)
        /// Input has the wrong size: a video frame whose dimensions or plane sizes do not
        /// match the encoder, or a PCM buffer that is not exactly one frame.
        case wrongFrameSize
        /// `x264_encoder_headers` failed or returned no SPS/PPS.
        case headersFailed
    }

    public let code: Code
    /// Human-readable detail.
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "EncoderError(\(code)): \(message)" }
}

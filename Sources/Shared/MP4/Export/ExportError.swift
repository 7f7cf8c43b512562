/// Why an export cannot be made; the message names the cause and what to ask for instead.
public struct ExportError: Error, CustomStringConvertible, Sendable {
    public enum Code: String, Sendable {
        /// The request itself: a range that is empty or reversed, a track the session lacks.
        case invalidRequest
        /// The range lies where the session has no samples of the chosen tracks.
        case emptyRange
        /// A chosen track changes its codec configuration inside the range (a setting changed
        /// across a restart): one MP4 track cannot hold both; export the parts separately.
        case configurationChanges
        /// More samples than one export may hold (``SessionExport/maxSamples``).
        case tooLarge
        /// A source file is not one of our recordings or is damaged.
        case notOurFile
        case io
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}

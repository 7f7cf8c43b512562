/// A configuration that cannot be used. `field` is the dotted path of the setting in the JSON
/// file (`ingest.port`, `tls.certificate`) or the command-line value it came from; `message`
/// says what is wrong and how to fix it.
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    enum Kind: String, Sendable, Equatable {
        /// The configuration file cannot be read.
        case unreadableFile
        /// The file is not valid JSON.
        case malformedJSON
        /// The file has keys this version does not know (usually a typo).
        case unknownKey
        /// A value has the wrong JSON type (a string where a number belongs, …).
        case wrongType
        /// A value is out of range, missing where required, or contradicts another one.
        case invalidValue
    }

    var kind: Kind
    /// Dotted path of the setting (nil when the problem is the file as a whole).
    var field: String?
    var message: String

    init(_ kind: Kind, field: String?, _ message: String) {
        self.kind = kind
        self.field = field
        self.message = message
    }

    public var description: String {
        guard let field else { return "configuration: \(message)" }
        return "configuration: \(field): \(message)"
    }
}

/// Constants of the MCRP transport (docs/protocol.md §2) that both ends need when they
/// set up TLS. Kept here rather than in `WireProtocol` so that this module stays free of
/// the framing code and the TLS layer can be used (and tested) on its own.
public enum MCRPTransport {
    /// Default TCP port of the recording server.
    public static let defaultPort = 7443
    /// ALPN protocol id; both ends offer only this one, so a peer speaking something else
    /// cannot complete the handshake.
    public static let alpnProtocol = "mcrp/1"
    /// Prefix of the SAN URI that carries the agent id in a client certificate.
    public static let agentURIPrefix = "urn:mcrp:agent:"
}

/// Why an agent identifier was rejected.
public enum AgentIdentifierError: Error, Equatable, CustomStringConvertible {
    case empty
    case tooLong(String, length: Int)
    case mustStartWithLetterOrDigit(String)
    case invalidCharacter(String, character: Character)

    public var description: String {
        switch self {
        case .empty:
            return "invalid agent id: it is empty (1…64 characters of A-Z a-z 0-9 . _ - are required)"
        case .tooLong(let id, let length):
            return "invalid agent id \"\(id.prefix(70))…\": \(length) characters, at most 64 are allowed"
        case .mustStartWithLetterOrDigit(let id):
            return "invalid agent id \"\(id)\": it must start with a letter or a digit"
        case .invalidCharacter(let id, let character):
            return "invalid agent id \"\(id)\": character \"\(character)\" is not allowed (only A-Z a-z 0-9 . _ -)"
        }
    }
}

/// Validation of agent identifiers: 1…64 characters of `[A-Za-z0-9._-]`, starting with a
/// letter or digit (protocol §2). The same rule applies to the `Hello.agentID`, to the ids
/// we put into certificates and to the ids we read back from them, so a certificate can
/// never smuggle an id the protocol layer would refuse.
public enum AgentIdentifier {
    /// Maximum length in characters (all allowed characters are ASCII, so also in bytes).
    public static let maximumLength = 64

    /// Throws an `AgentIdentifierError` describing the first problem with `id`.
    public static func validate(_ id: String) throws(AgentIdentifierError) {
        // Work on unicode scalars: a `Character` may combine several scalars, and we want
        // to reject anything outside ASCII outright rather than reason about graphemes.
        let scalars = id.unicodeScalars
        guard let first = scalars.first else { throw .empty }
        if scalars.count > maximumLength { throw .tooLong(id, length: scalars.count) }
        for scalar in scalars where !isAllowed(scalar) {
            throw .invalidCharacter(id, character: Character(scalar))
        }
        guard isAlphanumeric(first) else { throw .mustStartWithLetterOrDigit(id) }
    }

    /// `true` when `id` satisfies the rules of `validate(_:)`.
    public static func isValid(_ id: String) -> Bool {
        (try? validate(id)) != nil
    }

    private static func isAlphanumeric(_ s: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(s) || ("A"..."Z").contains(s) || ("0"..."9").contains(s)
    }

    private static func isAllowed(_ s: Unicode.Scalar) -> Bool {
        isAlphanumeric(s) || s == "." || s == "_" || s == "-"
    }
}

/// Every error the API answers, authentication failures and unknown routes included:
/// `{"error":{"code":"not_found","message":"no live session 01HX3Q0K6Y"}}`.
public struct ErrorResponse: Codable, Sendable, Equatable {
    public struct Detail: Codable, Sendable, Equatable {
        /// Stable: `bad_request`, `unauthorized`, `not_found`, `conflict`, `payload_too_large`,
        /// `internal_error`, `unavailable`.
        public var code: String
        /// Written for operators; recordctl prints it as it is.
        public var message: String
        /// The session the error is about, for a client to act on (a `conflict` with a
        /// running one); the key is left out when there is none.
        public var sessionID: String?

        public init(code: String, message: String, sessionID: String? = nil) {
            self.code = code
            self.message = message
            self.sessionID = sessionID
        }

        enum CodingKeys: String, CodingKey {
            case code, message, sessionID = "session_id"
        }
    }

    public var error: Detail

    public init(error: Detail) { self.error = error }
}

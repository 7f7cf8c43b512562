import Foundation

/// Signed-in web console sessions (docs/admin-api.md "Web console").
///
/// Signing in with the admin token yields a random session id, sent back only as an HttpOnly
/// cookie, and a second random value, the CSRF token, which the page sends in a header with
/// every request that changes state. Both live here, in memory: a restart signs everyone out,
/// which is the safe direction. Bounded: the oldest session goes when a new one would exceed
/// ``capacity``; each lasts ``lifetime`` from sign-in.
actor ConsoleSessions {
    static let capacity = 256
    static let lifetime: TimeInterval = 12 * 3600

    struct Session: Sendable {
        let csrfToken: String
        let expires: Date
    }

    private var sessions: [String: Session] = [:]
    private let now: @Sendable () -> Date

    init(now: @escaping @Sendable () -> Date = { Date() }) {
        self.now = now
    }

    /// A new session: its id (the cookie's value) and its CSRF token.
    func open() -> (id: String, csrfToken: String) {
        let current = now()
        sessions = sessions.filter { $0.value.expires > current }
        if sessions.count >= Self.capacity, let oldest = sessions.min(by: { $0.value.expires < $1.value.expires }) {
            sessions[oldest.key] = nil
        }
        let id = Self.randomToken(), csrf = Self.randomToken()
        sessions[id] = Session(csrfToken: csrf, expires: current.addingTimeInterval(Self.lifetime))
        return (id, csrf)
    }

    /// The session of a cookie value, if it exists and has not expired.
    func session(_ id: String) -> Session? {
        guard let session = sessions[id] else { return nil }
        guard session.expires > now() else {
            sessions[id] = nil
            return nil
        }
        return session
    }

    func close(_ id: String) {
        sessions[id] = nil
    }

    var count: Int { sessions.count }

    /// 256 random bits, base64url without padding (cookie- and header-safe).
    static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0 ..< 32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

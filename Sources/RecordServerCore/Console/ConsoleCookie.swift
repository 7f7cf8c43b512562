import Hummingbird

/// The console's session cookie: its name, how it is read from a request and how it is set.
enum ConsoleCookie {
    static let name = "recorder_console"

    /// The value of our cookie in a `Cookie` header (`a=1; recorder_console=…`), if present.
    static func value(in request: Request) -> String? {
        for header in request.headers[values: .cookie] {
            for pair in header.split(separator: ";") {
                let trimmed = pair.drop(while: { $0 == " " })
                guard let equals = trimmed.firstIndex(of: "=") else { continue }
                if trimmed[..<equals] == name { return String(trimmed[trimmed.index(after: equals)...]) }
            }
        }
        return nil
    }

    /// `Set-Cookie` for a new session: HttpOnly (no script reads it), SameSite=Strict (no other
    /// site's page sends it), Secure when the listener speaks TLS, for the session's lifetime.
    static func setting(_ id: String, secure: Bool) -> String {
        "\(name)=\(id); Path=/; HttpOnly; SameSite=Strict; Max-Age=\(Int(ConsoleSessions.lifetime))" + (secure ? "; Secure" : "")
    }

    /// `Set-Cookie` that removes it (sign-out).
    static func clearing(secure: Bool) -> String {
        "\(name)=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0" + (secure ? "; Secure" : "")
    }
}

import Hummingbird

/// The admin bearer token. A wrapper rather than a bare `String` so it cannot end up in a log
/// line, a `print`, or a debugger dump of `AdminServer` by accident.
struct BearerToken: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    private let bytes: [UInt8]

    init(_ token: String) {
        bytes = Array(token.utf8)
    }

    /// An empty configured token authorises nobody: failing closed beats an open admin API.
    var isUsable: Bool { !bytes.isEmpty }

    var description: String { "<redacted>" }
    var debugDescription: String { "<redacted>" }
    var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }

    /// Checks an `Authorization` header value of the form `Bearer <token>`.
    func authorizes(headerValue: String?) -> Bool {
        guard isUsable, let headerValue, let presented = Self.bearerCredentials(headerValue) else { return false }
        return Self.constantTimeEquals(Array(presented.utf8), bytes)
    }

    /// The credentials of a `Bearer` authorization (scheme matched case-insensitively, RFC 7235 §2.1).
    static func bearerCredentials(_ header: String) -> Substring? {
        let scheme = "bearer "
        guard header.count > scheme.count, header.prefix(scheme.count).lowercased() == scheme else { return nil }
        let credentials = header.dropFirst(scheme.count).drop(while: { $0 == " " })
        return credentials.isEmpty ? nil : credentials
    }

    /// Compares without an early exit, so the time taken does not reveal how many leading bytes
    /// matched. It runs over the presented length (known to the caller anyway) and folds any
    /// length difference into the result, so the expected length is not revealed byte by byte either.
    static func constantTimeEquals(_ presented: [UInt8], _ expected: [UInt8]) -> Bool {
        var difference: UInt8 = presented.count == expected.count ? 0 : 1
        for index in presented.indices {
            let other = expected.isEmpty ? 0 : expected[index % expected.count]
            difference |= presented[index] ^ other
        }
        return difference == 0
    }
}

/// Requires the bearer token, or a web console session cookie, on every request except
/// `GET /health` (which must stay open for liveness probes and answers anonymous callers with a
/// reduced body) and the console's way in (``ConsoleRoutes/isPublic(_:)``).
///
/// A request that carries only the cookie and changes state (anything but GET and HEAD) must
/// also carry its session's CSRF token in `X-CSRF-Token`: a page of another site can make the
/// browser send the cookie (were SameSite=Strict ever ignored), but cannot read the token or
/// set the header.
struct AdminAuthMiddleware<Context: RequestContext>: RouterMiddleware {
    let token: BearerToken
    let console: ConsoleSessions

    func handle(_ request: Request, context: Context,
                next: (Request, Context) async throws -> Response) async throws -> Response {
        if request.method == .get, request.uri.path == AdminRoutes.healthPath {
            return try await next(request, context)
        }
        if ConsoleRoutes.isPublic(request) || token.authorizes(headerValue: request.headers[.authorization]) {
            return try await next(request, context)
        }
        if let id = ConsoleCookie.value(in: request), let session = await console.session(id) {
            if request.method != .get && request.method != .head {
                let presented = ConsoleRoutes.csrfToken(in: request) ?? ""
                guard BearerToken.constantTimeEquals(Array(presented.utf8), Array(session.csrfToken.utf8)) else {
                    throw AdminAPIError.csrfTokenMissing
                }
            }
            return try await next(request, context)
        }
        // A person opening a console page is shown the way in; everyone else gets the JSON error.
        if request.uri.path.hasPrefix("/console") {
            return ConsolePages.signIn(status: .unauthorized, problem: nil)
        }
        throw AdminAPIError.unauthorized
    }
}

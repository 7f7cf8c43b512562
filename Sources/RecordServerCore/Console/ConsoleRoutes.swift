import Foundation
import Hummingbird
import NIOCore

/// The web console (docs/admin-api.md "Web console"): a sign-in page, the signed-in page and
/// its script and style sheet, all compiled into the binary (`Console/Assets`, no file is read
/// at run time, so no request can name one). Signing in exchanges the admin token for a
/// session cookie (``ConsoleSessions``); the page then uses the same `/v1` API as recordctl.
struct ConsoleRoutes: Sendable {
    static let signInPath = "/console/sign-in"
    static let signOutPath = "/console/sign-out"
    /// The one header a signed-in page must add to a request that changes state: `X-CSRF-Token`.
    static func csrfToken(in request: Request) -> String? {
        request.headers[.init("X-CSRF-Token")!]
    }
    /// A sign-in form holds one token; nothing longer is read.
    static let maxFormBytes = 4096

    let token: BearerToken
    let sessions: ConsoleSessions
    /// The admin listener speaks TLS: the cookie is then `Secure`.
    let secureCookies: Bool

    /// What answers without a session: the way in, and the redirect to it.
    static func isPublic(_ request: Request) -> Bool {
        let path = request.uri.path
        switch request.method {
        // The style sheet too: the sign-in form uses it (it holds nothing but colours and layout).
        case .get, .head: return path == "/" || path == signInPath || path == "/console/console.css"
        case .post: return path == signInPath
        default: return false
        }
    }

    func register(on router: Router<BasicRequestContext>) {
        router.get("/") { _, _ in Self.redirect(to: "/console/") }
        router.get(RouterPath(stringLiteral: Self.signInPath)) { _, _ in ConsolePages.signIn(status: .ok, problem: nil) }
        router.post(RouterPath(stringLiteral: Self.signInPath)) { request, _ in try await self.signIn(request) }
        router.post(RouterPath(stringLiteral: Self.signOutPath)) { request, _ in await self.signOut(request) }
        router.get("/console") { request, _ in try await self.page(request) }
        router.get("/console/{asset}") { _, context in
            guard let name = context.parameters.get("asset"), let asset = ConsolePages.asset(named: name) else {
                throw AdminAPIError(status: .notFound, code: "not_found", message: "no such console file")
            }
            return asset
        }
    }

    /// The signed-in page, carrying its session's CSRF token for the script to send back.
    private func page(_ request: Request) async throws -> Response {
        // The middleware let the request through with a session cookie or the bearer token; a
        // bearer-only client (curl) has no session to carry a CSRF token, so it gets a new one.
        if let id = ConsoleCookie.value(in: request), let session = await sessions.session(id) {
            return ConsolePages.app(csrfToken: session.csrfToken)
        }
        let (id, csrf) = await sessions.open()
        var response = ConsolePages.app(csrfToken: csrf)
        response.headers[.setCookie] = ConsoleCookie.setting(id, secure: secureCookies)
        return response
    }

    private func signIn(_ request: Request) async throws -> Response {
        // A form another site posts here (login cross-site request forgery) names that site
        // in Origin; browsers send Origin with every POST.
        if let origin = request.headers[.origin], !Self.sameOrigin(origin, host: request.head.authority) {
            return ConsolePages.signIn(status: .forbidden, problem: "This sign-in came from another site (\(origin)); open the console at its own address.")
        }
        let body = try await request.body.collect(upTo: Self.maxFormBytes)
        let presented = Self.formValue("token", in: String(buffer: body)) ?? ""
        guard token.authorizes(headerValue: "Bearer " + presented) else {
            // A pause per wrong guess makes guessing the token by trying slow.
            try? await Task.sleep(for: .milliseconds(300))  // cancelled: answer at once, still 401
            return ConsolePages.signIn(status: .unauthorized, problem: presented.isEmpty
                ? "Enter the admin token (the server's admin.token, or the file given with --admin-token-file)."
                : "That is not the admin token. Sign-in refused.")
        }
        let (id, _) = await sessions.open()
        var response = Self.redirect(to: "/console/")
        response.headers[.setCookie] = ConsoleCookie.setting(id, secure: secureCookies)
        return response
    }

    private func signOut(_ request: Request) async -> Response {
        if let id = ConsoleCookie.value(in: request) { await sessions.close(id) }
        var response = Self.redirect(to: Self.signInPath)
        response.headers[.setCookie] = ConsoleCookie.clearing(secure: secureCookies)
        return response
    }

    static func redirect(to location: String) -> Response {
        Response(status: .seeOther, headers: [.location: location, .cacheControl: "no-store"])
    }

    /// `Origin: http://host:port` against the request's own authority.
    static func sameOrigin(_ origin: String, host: String?) -> Bool {
        guard let host, let schemeEnd = origin.range(of: "://") else { return false }
        return origin[schemeEnd.upperBound...].lowercased() == host.lowercased()
    }

    /// One field of an `application/x-www-form-urlencoded` body.
    static func formValue(_ name: String, in body: String) -> String? {
        for pair in body.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0] == name else { continue }
            return String(parts[1]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding
        }
        return nil
    }
}

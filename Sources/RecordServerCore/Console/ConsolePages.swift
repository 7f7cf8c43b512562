import Hummingbird
import NIOCore

/// The console's documents, compiled in from `Console/Assets` (Package.swift `embedInCode`).
enum ConsolePages {
    /// Only this origin's script, style and media; blob: for Media Source Extensions; no
    /// framing (clickjacking), no inline script (an injected `<script>` does not run).
    static let securityHeaders: HTTPFields = [
        .contentSecurityPolicy: "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; media-src 'self' blob:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
        .xContentTypeOptions: "nosniff",
        .init("X-Frame-Options")!: "DENY",
        // same-origin, not no-referrer: under no-referrer chromium sends `Origin: null` with the
        // sign-in form, and the sign-in could no longer tell its own page from another site.
        .init("Referrer-Policy")!: "same-origin",
        .cacheControl: "no-store",
    ]

    static func app(csrfToken: String) -> Response {
        // The token is base64url: nothing in it needs escaping in an attribute.
        let html = String(decoding: PackageResources.index_html, as: UTF8.self)
            .replacingOccurrences(of: "__CSRF_TOKEN__", with: csrfToken)
        return document(html, status: .ok)
    }

    static func signIn(status: HTTPResponse.Status, problem: String?) -> Response {
        let message = problem.map { "<p class=\"problem\" role=\"alert\">\(escape($0))</p>" } ?? ""
        let html = String(decoding: PackageResources.sign_in_html, as: UTF8.self)
            .replacingOccurrences(of: "__PROBLEM__", with: message)
        var response = document(html, status: status)
        // As every 401 of the listener: the other way in is the bearer token.
        if status == .unauthorized { response.headers[.wwwAuthenticate] = #"Bearer realm="record-server""# }
        return response
    }

    static func asset(named name: String) -> Response? {
        let (bytes, type): ([UInt8], String)
        switch name {
        case "console.js": (bytes, type) = (PackageResources.console_js, "text/javascript; charset=utf-8")
        case "console.css": (bytes, type) = (PackageResources.console_css, "text/css; charset=utf-8")
        default: return nil
        }
        var headers = securityHeaders
        headers[.contentType] = type
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    private static func document(_ html: String, status: HTTPResponse.Status) -> Response {
        var headers = securityHeaders
        headers[.contentType] = "text/html; charset=utf-8"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: html)))
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}

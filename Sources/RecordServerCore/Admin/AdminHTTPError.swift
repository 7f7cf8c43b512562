import AdminModels
import Foundation
import Hummingbird
import Logging
import NIOCore

/// An error the HTTP layer itself raises (bad input, missing token), carrying the status and
/// the stable `code` string that ends up in `{"error":{"code":…,"message":…}}`.
struct AdminAPIError: Error, Sendable, Equatable {
    var status: HTTPResponse.Status
    var code: String
    var message: String
    var sessionID: String?

    static func badRequest(_ message: String) -> AdminAPIError {
        AdminAPIError(status: .badRequest, code: "bad_request", message: message)
    }

    static let unauthorized = AdminAPIError(
        status: .unauthorized, code: "unauthorized",
        message: "missing or invalid bearer token (send \"Authorization: Bearer <token>\", or sign in to the console at /console/)")

    static let csrfTokenMissing = AdminAPIError(
        status: .forbidden, code: "csrf_token_missing",
        message: "a console request that changes state needs its page's X-CSRF-Token header (reload the console page)")

    static func payloadTooLarge(limit: Int) -> AdminAPIError {
        AdminAPIError(status: .contentTooLarge, code: "payload_too_large",
                      message: "request body is larger than \(limit) bytes")
    }

    /// The API's view of a backend failure; the backend's message is passed through because it
    /// is written for operators ("agent cam-1 is not connected").
    init(_ error: AdminError) {
        switch error.kind {
        case .notFound: self.init(status: .notFound, code: "not_found", message: error.message)
        case .conflict: self.init(status: .conflict, code: "conflict", message: error.message)
        case .badRequest: self.init(status: .badRequest, code: "bad_request", message: error.message)
        case .unavailable: self.init(status: .serviceUnavailable, code: "unavailable", message: error.message)
        }
        sessionID = error.sessionID
    }

    init(status: HTTPResponse.Status, code: String, message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    func response() -> Response {
        var response = AdminResponses.json(ErrorResponse(error: .init(code: code, message: message, sessionID: sessionID)), status: status)
        if status == .unauthorized {
            // RFC 6750 §3: tell the client which scheme to use.
            response.headers[.wwwAuthenticate] = #"Bearer realm="record-server""#
        }
        return response
    }
}

enum AdminResponses {
    static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) -> Response {
        let data = AdminJSON.encode(value)
        return Response(status: status, headers: [.contentType: "application/json; charset=utf-8"],
                        body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }
}

/// The outermost middleware: turns every error into the JSON error format and writes one
/// access-log line per request. It deliberately logs method, path, status and duration only:
/// never headers (the bearer token) and never the query (it is echoed in errors instead).
struct AdminErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    let logger: Logger

    func handle(_ request: Request, context: Context,
                next: (Request, Context) async throws -> Response) async throws -> Response {
        let started = ContinuousClock.now
        let response: Response
        do {
            response = try await next(request, context)
        } catch {
            response = Self.translate(error, logger: logger, request: request)
        }
        let elapsed = ContinuousClock.now - started
        logger.debug("admin request", metadata: [
            "method": "\(request.method.rawValue)", "path": "\(request.uri.path)",
            "status": "\(response.status.code)",
            "ms": "\(elapsed.milliseconds)",
        ])
        return response
    }

    static func translate(_ error: any Error, logger: Logger, request: Request) -> Response {
        switch error {
        case let error as AdminAPIError:
            return error.response()
        case let error as AdminError:
            return AdminAPIError(error).response()
        case let error as NIOTooManyBytesError:
            return AdminAPIError.payloadTooLarge(limit: error.maxBytes ?? AdminServer.maxBodyBytes).response()
        case let error as HTTPError:
            // Unknown routes and methods come from the router as HTTPError(.notFound).
            let code = error.status == .notFound ? "not_found" : "http_\(error.status.code)"
            let message = error.status == .notFound
                ? "no route for \(request.method.rawValue) \(request.uri.path)"
                : (error.body ?? error.status.reasonPhrase)
            return AdminAPIError(status: error.status, code: code, message: message).response()
        default:
            // Internal details stay in the log; the client gets a generic message.
            logger.error("admin request failed", metadata: [
                "method": "\(request.method.rawValue)", "path": "\(request.uri.path)", "error": "\(error)",
            ])
            return AdminAPIError(status: .internalServerError, code: "internal_error",
                                 message: "internal server error").response()
        }
    }
}

import AdminModels
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL

/// recordctl's client of the admin API (docs/admin-api.md) on AsyncHTTPClient.
///
/// Synchronous, as recordctl's commands are: each request waits for its answer, bounded by
/// `--timeout`. Every failure becomes a `CLIFailure` in recordctl's own words with its exit
/// code (`AdminTransportFailure` for the network); a library's description never reaches the
/// operator. `https` URLs use TLS with the system's trust roots, for a TLS proxy in front of
/// the API.
final class AdminClient: Sendable {
    let baseURL: URL
    private let token: String?
    private let timeout: TimeAmount
    private let http: HTTPClient
    /// The roots an https:// server's certificate must chain to; nil: the system's.
    private let trustRoots: NIOSSLTrustRoots?

    /// - Parameter caFile: a PEM CA certificate to trust for an https:// server (a server with
    ///   admin.tls uses its own certificate, which the system does not know).
    init(baseURL: URL, token: String?, timeout: Double, caFile: String? = nil) {
        self.baseURL = baseURL
        self.token = token
        self.timeout = .nanoseconds(Int64(timeout * 1_000_000_000))
        trustRoots = caFile.map { .file($0) }
        var configuration = HTTPClient.Configuration()
        configuration.tlsConfiguration = Self.tls(trustRoots)
        configuration.timeout = .init(connect: self.timeout, read: self.timeout)
        // A refused connection is an answer: report it at once. (The pool would otherwise retry
        // until the deadline, and `top` would take `--timeout` to say the server is down.)
        configuration.connectionPool.retryConnectionEstablishment = false
        http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// A client TLS configuration trusting `roots`, or nil for the library's default.
    static func tls(_ roots: NIOSSLTrustRoots?) -> TLSConfiguration? {
        guard let roots else { return nil }
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.trustRoots = roots
        return configuration
    }

    deinit {
        // Shutting down only closes idle connections; nothing is waiting for an answer once
        // the last reference is gone, so there is nothing to report.
        try? http.syncShutdown()
    }

    /// A 2xx answer.
    struct Response: Sendable {
        var status: Int
        var body: Data
        /// Where it came from, for messages.
        var server: String
        var request: String

        /// The body as one of the API's types.
        func decode<Body: Decodable>(_ type: Body.Type) throws -> Body {
            do {
                return try AdminJSON.decoder().decode(type, from: body)
            } catch {
                throw CLIFailure(.failed, "record-server at \(server) answered \(request) with JSON recordctl does not understand "
                    + "(\(AdminClient.describe(decodingFailure: error))); is recordctl as new as the server?")
            }
        }
    }

    func send(_ method: HTTPMethod, _ path: String, query: [(String, String)] = []) throws -> Response {
        try perform(method, path, query: query, body: nil)
    }

    func send(_ method: HTTPMethod, _ path: String, body: some Encodable) throws -> Response {
        let data: Data
        do {
            data = try AdminJSON.encoder().encode(body)
        } catch {
            throw CLIFailure(.usage, "cannot encode the request to \(path): \(error)")
        }
        return try perform(method, path, query: [], body: data)
    }

    /// Sends a request; maps transport and HTTP errors to `CLIFailure` with the right exit code.
    /// Returns only 2xx responses.
    private func perform(_ method: HTTPMethod, _ path: String, query: [(String, String)], body: Data?) throws -> Response {
        var request = try self.request(method, path, query: query)
        if let body {
            request.body = .bytes(body)
            request.headers.add(name: "Content-Type", value: "application/json")
        }
        let answer: HTTPClient.Response
        do {
            answer = try http.execute(request: request, deadline: .now() + timeout).wait()
        } catch {
            let failure = AdminTransportFailure(error, timeout: timeout)
            throw CLIFailure(.unreachable, "cannot reach record-server at \(baseURL.absoluteString): \(failure.explanation)")
        }
        let response = Response(status: Int(answer.status.code), body: answer.body.map { Data($0.readableBytesView) } ?? Data(),
                                server: baseURL.absoluteString, request: "\(method.rawValue) \(path)")
        if (200..<300).contains(response.status) { return response }
        throw failure(status: response.status, body: response.body)
    }

    /// A request to `path` under the base URL, with the token.
    private func request(_ method: HTTPMethod, _ path: String, query: [(String, String)] = []) throws -> HTTPClient.Request {
        var components = URLComponents(url: baseURL, resolvingAgainstBaseURL: false)!
        components.path = (components.path == "/" ? "" : components.path) + path
        if !query.isEmpty {
            components.percentEncodedQuery = query.map { key, value in
                "\(Self.encode(key))=\(Self.encode(value))"
            }.joined(separator: "&")
        }
        // The request refuses only a URL without a host or with another scheme, which
        // `resolvedServer` has ruled out; the message below covers it all the same.
        guard let url = components.url, var request = try? HTTPClient.Request(url: url, method: method) else {
            throw CLIFailure(.usage, "cannot build a URL for \(path)")
        }
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        return request
    }

    /// A GET streamed into the file `output`: written to `<output>.part` and renamed once
    /// every byte the server announced has arrived, so a broken download never sits under
    /// the final name. Returns the byte count.
    /// A GET whose body goes to a file: written to `output.part`, renamed to `output` once
    /// complete. Returns its size and the response's headers.
    func download(_ path: String, query: [(String, String)] = [], to output: String) throws -> (bytes: Int, headers: HTTPHeaders) {
        let request = try self.request(.GET, path, query: query)
        let partial = output + ".part"
        let delegate: FileDownloadDelegate
        // The process-wide pool: the delegate closes the file after the request has finished,
        // and the client's own pool would be shut down with the client before that ("Cannot
        // schedule tasks on an EventLoop that has already shut down" on stderr, and a leaked fd).
        do { delegate = try FileDownloadDelegate(path: partial, pool: .singleton) } catch {
            throw CLIFailure(.failed, "cannot write \(partial): \(error)")
        }
        let progress: FileDownloadDelegate.Progress
        do {
            // No overall deadline: a large file takes what it takes; --timeout bounds each read.
            progress = try http.execute(request: request, delegate: delegate).wait()
        } catch {
            Self.discard(partial)
            let failure = AdminTransportFailure(error, timeout: timeout)
            throw CLIFailure(.unreachable, "cannot download from record-server at \(baseURL.absoluteString): \(failure.explanation)")
        }
        let status = Int(progress.head.status.code)
        guard status == 200 else {
            // An error's JSON body went into the file; it is read back for the message.
            let body = FileManager.default.contents(atPath: partial) ?? Data()
            Self.discard(partial)
            throw failure(status: status, body: body)
        }
        if let total = progress.totalBytes, total != progress.receivedBytes {
            Self.discard(partial)
            throw CLIFailure(.failed, "the download ended after \(progress.receivedBytes) of \(total) bytes; nothing was saved")
        }
        guard rename(partial, output) == 0 else {
            Self.discard(partial)
            throw CLIFailure(.failed, "cannot move the download to \(output): errno \(errno)")
        }
        return (progress.receivedBytes, progress.head.headers)
    }

    /// Three of the server's 15 s keep-alives (`GET /v1/events`).
    static let streamReadTimeout: TimeAmount = .seconds(45)

    /// A GET whose body is a stream of lines (server-sent events): `line` gets each line as it
    /// arrives, and returns false to end the stream. Returns once the stream has ended.
    func streamLines(_ path: String, line: @escaping @Sendable (String) -> Bool) throws {
        let request = try self.request(.GET, path)
        let delegate = LineStreamDelegate(line: line)
        // A stream is quiet between events, so `--timeout` cannot bound its reads: the server
        // sends a keep-alive every 15 s, and only three missed ones mean it is gone.
        var configuration = HTTPClient.Configuration()
        configuration.tlsConfiguration = Self.tls(trustRoots)
        configuration.timeout = .init(connect: timeout, read: Self.streamReadTimeout)
        configuration.connectionPool.retryConnectionEstablishment = false
        let streaming = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        defer {
            // Its one request has ended (answered, cancelled or failed): nothing is left to report.
            try? streaming.syncShutdown()
        }
        let answer: (status: Int, body: Data)
        do {
            // No deadline: the stream is open as long as the server has events to send.
            answer = try streaming.execute(request: request, delegate: delegate).wait()
        } catch let error as HTTPClientError where error == .cancelled {
            return  // ended by `line`
        } catch {
            let failure = AdminTransportFailure(error, timeout: Self.streamReadTimeout)
            throw CLIFailure(.unreachable, "cannot read the events of record-server at \(baseURL.absoluteString): \(failure.explanation)")
        }
        guard answer.status == 200 else { throw failure(status: answer.status, body: answer.body) }
    }

    /// Removes a partial download (there is none when the file could not even be created).
    private static func discard(_ path: String) { _ = unlink(path) }

    /// An answer other than 2xx, in recordctl's words, with its exit code.
    private func failure(status: Int, body: Data) -> CLIFailure {
        // A body that is not the API's error (a proxy's page) leaves the status to speak.
        let serverMessage = (try? AdminJSON.decoder().decode(ErrorResponse.self, from: body))?.error.message
        switch status {
        case 401:
            let why = token == nil
                ? "no admin token given (use --token-file, $RECORDCTL_TOKEN or $RECORDCTL_TOKEN_FILE)"
                : "check --token-file / $RECORDCTL_TOKEN"
            return CLIFailure(.unreachable, "the admin token was refused by record-server at \(baseURL.absoluteString) (\(why))")
        case 400:
            return CLIFailure(.usage, serverMessage ?? "the server refused the request (HTTP 400)")
        default:
            return CLIFailure(.failed, serverMessage ?? "the server answered HTTP \(status)")
        }
    }

    /// Which field did not decode, and why, in a few words.
    static func describe(decodingFailure error: any Error) -> String {
        func path(_ codingPath: [any CodingKey]) -> String {
            codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case DecodingError.keyNotFound(let key, let context):
            return "no \"\((context.codingPath.isEmpty ? "" : path(context.codingPath) + ".") + key.stringValue)\""
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            return "unexpected value at \"\(path(context.codingPath))\""
        case DecodingError.dataCorrupted(let context) where context.codingPath.isEmpty:
            return "not JSON"
        case DecodingError.dataCorrupted(let context):
            return "invalid value at \"\(path(context.codingPath))\""
        default:
            return "not the expected JSON"
        }
    }

    static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
    static func encode(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text
    }

    /// Percent-encodes one path segment (ids come from users).
    static func segment(_ id: String) -> String { encode(id) }
}

/// Splits a streamed body into lines as it arrives; an error answer's body is kept whole.
private final class LineStreamDelegate: HTTPClientResponseDelegate, @unchecked Sendable {
    typealias Response = (status: Int, body: Data)
    // Touched only on the request's event loop, one callback at a time.
    private var status = 0
    private var pending = Data()
    private var errorBody = Data()
    private let line: @Sendable (String) -> Bool

    init(line: @escaping @Sendable (String) -> Bool) { self.line = line }

    func didReceiveHead(task: HTTPClient.Task<Response>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        status = Int(head.status.code)
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Response>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        guard status == 200 else {
            errorBody.append(contentsOf: buffer.readableBytesView)
            return task.eventLoop.makeSucceededVoidFuture()
        }
        pending.append(contentsOf: buffer.readableBytesView)
        while let end = pending.firstIndex(of: UInt8(ascii: "\n")) {
            let text = String(decoding: pending[pending.startIndex ..< end], as: UTF8.self)
            pending = Data(pending[(end + 1)...])
            if !line(text) {
                task.cancel()
                break
            }
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didFinishRequest(task: HTTPClient.Task<Response>) throws -> Response { (status, errorBody) }
}

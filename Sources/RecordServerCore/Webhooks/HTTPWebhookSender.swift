import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// Posts webhooks with AsyncHTTPClient. Redirects are not followed (a signed post must reach
/// the URL the operator configured); a connection or an answer slower than the timeout is a
/// failed attempt.
struct HTTPWebhookSender: WebhookSender {
    let client: HTTPClient

    static func makeClient(policy: WebhookRetryPolicy) -> HTTPClient {
        let timeout = TimeAmount.nanoseconds(policy.requestTimeout.nanoseconds)
        let configuration = HTTPClient.Configuration(redirectConfiguration: .disallow, timeout: .init(connect: timeout, read: timeout))
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    func post(_ request: WebhookRequest, timeout: Duration) async -> WebhookAttemptOutcome {
        var http = HTTPClientRequest(url: request.url.absoluteString)
        http.method = .POST
        for header in request.headers { http.headers.add(name: header.name, value: header.value) }
        http.body = .bytes(ByteBuffer(bytes: request.body))
        do {
            let response = try await client.execute(http, timeout: .nanoseconds(timeout.nanoseconds))
            await Self.discard(response.body)
            guard (200 ..< 300).contains(response.status.code) else { return .failed("answered \(response.status.code)") }
            return .delivered
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout {
            return .failed("no answer within \(timeout)")
        } catch {
            return .failed("\(error)")
        }
    }

    /// Reads and drops the answer's body, which says nothing the status does not: a request
    /// whose body is left unread holds its connection (and the client's shutdown) until the
    /// read timeout. Past ``maxDiscardedBytes`` the request is abandoned, closing its connection.
    static func discard(_ body: HTTPClientResponse.Body) async {
        var read = 0
        do {
            for try await chunk in body {
                read += chunk.readableBytes
                if read > maxDiscardedBytes { break }
            }
        } catch {
            // A body cut short changes nothing: the status has answered already.
        }
    }

    static let maxDiscardedBytes = 64 << 10
}

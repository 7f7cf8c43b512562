import AdminModels
import Foundation

/// One event on its way to one target: the JSON the SSE stream sends as `data:`, and the id
/// that stays the same over the retries.
struct WebhookDelivery: Sendable, Equatable {
    let id: String
    let type: ServerEvent.Kind
    let body: Data
}

/// One POST as the sender makes it; signed anew on every attempt, so its timestamp is fresh.
struct WebhookRequest: Sendable {
    let url: URL
    let headers: [(name: String, value: String)]
    let body: Data

    init(delivery: WebhookDelivery, to target: WebhookTarget, at timestamp: Int64) {
        url = target.url
        body = delivery.body
        headers = [
            ("Content-Type", "application/json"),
            ("User-Agent", "record-server"),
            (WebhookHeader.event, delivery.type.rawValue),
            (WebhookHeader.delivery, delivery.id),
            (WebhookHeader.timestamp, String(timestamp)),
            (WebhookHeader.signature, WebhookSignature.sign(body: delivery.body, timestamp: timestamp, key: target.key)),
        ]
    }
}

/// What one attempt came to.
enum WebhookAttemptOutcome: Sendable, Equatable {
    /// The target answered 2xx.
    case delivered
    /// Anything else: another status, no connection, no answer within the timeout. Retried.
    case failed(String)
}

/// Makes one POST. The server's is ``HTTPWebhookSender``; tests inject their own.
protocol WebhookSender: Sendable {
    func post(_ request: WebhookRequest, timeout: Duration) async -> WebhookAttemptOutcome
}

/// How hard delivery tries: the backoff doubles from `baseDelay` up to `maxDelay`; after
/// `maxAttempts` failed attempts the delivery is given up.
struct WebhookRetryPolicy: Sendable, Equatable {
    var baseDelay: Duration
    var maxDelay: Duration
    var maxAttempts: Int
    /// One attempt: connecting, sending and the answer's head.
    var requestTimeout: Duration

    /// 8 attempts over about two minutes (waits of 1, 2, 4, 8, 16, 32 and 60 s), 10 s each.
    static let standard = WebhookRetryPolicy(baseDelay: .seconds(1), maxDelay: .seconds(60), maxAttempts: 8,
                                                    requestTimeout: .seconds(10))

    init(baseDelay: Duration, maxDelay: Duration, maxAttempts: Int, requestTimeout: Duration) {
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.maxAttempts = maxAttempts
        self.requestTimeout = requestTimeout
    }

    /// The wait after failed attempt `attempt` (1-based): base × 2^(attempt-1), capped.
    func delay(afterAttempt attempt: Int) -> Duration {
        let factor = 1 << min(max(attempt - 1, 0), 30)
        return min(baseDelay * factor, maxDelay)
    }
}

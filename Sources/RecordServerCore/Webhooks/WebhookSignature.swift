import Crypto
import Foundation

/// The webhook signature (docs/admin-api.md, "Webhooks"): HMAC-SHA256 with the target's
/// secret over `"<timestamp>.<body>"`, sent as `sha256=<lowercase hex>`. The timestamp is
/// signed with the body so a receiver that rejects old timestamps also rejects replays.
enum WebhookSignature {
    static func sign(body: Data, timestamp: Int64, key: SymmetricKey) -> String {
        var message = Data("\(timestamp).".utf8)
        message.append(body)
        let mac = HMAC<SHA256>.authenticationCode(for: message, using: key)
        return "sha256=" + mac.map { String(format: "%02x", $0) }.joined()
    }
}

/// The headers of every webhook post, in one place for the sender, the docs and the tests.
enum WebhookHeader {
    /// The event's type (`session.started`, …), also the body's `type`.
    static let event = "X-Recorder-Event"
    /// Unique per event and target, the same on every retry: receivers drop repeats by it.
    static let delivery = "X-Recorder-Delivery"
    /// Unix seconds when this attempt was signed.
    static let timestamp = "X-Recorder-Timestamp"
    /// `sha256=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>`.
    static let signature = "X-Recorder-Signature"
}

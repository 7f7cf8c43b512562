import AdminModels
import Crypto
import Foundation

/// One receiver of webhooks, as the server uses it: where to post, the key that signs each
/// post, and which event types it wants. Made from the configuration
/// (``ServerConfiguration/webhookTargets()``), which has checked the URL and read the secret.
struct WebhookTarget: Sendable {
    let url: URL
    let key: SymmetricKey
    /// nil: every event type.
    let eventTypes: Set<ServerEvent.Kind>?
    /// How metrics and logs name the target: its URL without credentials, query or fragment,
    /// which may hold secrets of their own.
    let label: String

    init(url: URL, secret: String, eventTypes: Set<ServerEvent.Kind>? = nil) {
        self.url = url
        key = SymmetricKey(data: Data(secret.utf8))
        self.eventTypes = eventTypes
        label = Self.label(of: url)
    }

    func wants(_ type: ServerEvent.Kind) -> Bool { eventTypes?.contains(type) ?? true }

    static func label(of url: URL) -> String {
        var parts = URLComponents()
        parts.scheme = url.scheme
        parts.host = url.host
        parts.port = url.port
        parts.path = url.path
        return parts.string ?? url.absoluteString
    }
}

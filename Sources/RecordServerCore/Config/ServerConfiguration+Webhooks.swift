import AdminModels
import Foundation
import Shared

extension ServerConfiguration {
    /// A receiver of webhooks (docs/admin-api.md, "Webhooks"): every event of the types it
    /// wants is posted to `url` as JSON, signed with the secret in `secretFile`.
    public struct Webhook: Codable, Sendable, Equatable {
        /// An `http` or `https` URL.
        var url: String
        /// A file holding the signing secret (surrounding whitespace trimmed). A file rather
        /// than a value, so the secret is in neither the configuration nor the command line.
        var secretFile: String
        /// The event types to post (`session.started`, …); nil for every type.
        var events: [String]?

        init(url: String, secretFile: String, events: [String]? = nil) {
            self.url = url
            self.secretFile = secretFile
            self.events = events
        }

        enum CodingKeys: String, CodingKey, CaseIterable { case url, secretFile, events }

        public init(from decoder: any Decoder) throws {
            try StrictDecoding.rejectUnknownKeys(decoder, known: CodingKeys.self)
            let c = try decoder.container(keyedBy: CodingKeys.self)
            url = try c.decode(String.self, forKey: .url)
            secretFile = try c.decode(String.self, forKey: .secretFile)
            events = try c.decodeIfPresent([String].self, forKey: .events)
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(url, forKey: .url)
            try c.encode(secretFile, forKey: .secretFile)
            try c.encode(events, forKey: .events)
        }

        /// The command line's form, `URL,secret-file=PATH[,events=TYPE+TYPE…]`. The options
        /// are read from the end, so a URL may hold commas of its own.
        static func parse(_ text: String, field: String) throws(ConfigurationError) -> Webhook {
            var parts = text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            var secretFile: String?
            var events: [String]?
            while let last = parts.last, parts.count > 1 {
                if last.hasPrefix("secret-file=") {
                    secretFile = String(last.dropFirst("secret-file=".count))
                } else if last.hasPrefix("events=") {
                    events = last.dropFirst("events=".count).split(separator: "+").map(String.init)
                } else {
                    break
                }
                parts.removeLast()
            }
            guard let secretFile else {
                throw ConfigurationError(.invalidValue, field: field, "\"\(text)\" names no secret file; write " +
                                         "URL,secret-file=PATH[,events=TYPE+TYPE], e.g. https://hooks.example/rec,secret-file=/etc/record-server/hook.secret")
            }
            return Webhook(url: parts.joined(separator: ","), secretFile: secretFile, events: events)
        }
    }

    /// Receivers past this are refused: each has its own queue and worker.
    static let maxWebhooks = 16

    /// What is wrong with `webhooks`, each problem naming the field and the fix.
    func webhookProblems() -> [ConfigurationError] {
        var found: [ConfigurationError] = []
        func fail(_ field: String, _ message: String) { found.append(ConfigurationError(.invalidValue, field: field, message)) }
        if webhooks.count > Self.maxWebhooks {
            fail("webhooks", "lists \(webhooks.count) receivers; at most \(Self.maxWebhooks) are allowed (a relay can fan out further)")
        }
        var seen: Set<String> = []
        for (n, webhook) in webhooks.enumerated() {
            let field = "webhooks[\(n)]"
            do throws(ConfigurationError) {
                let url = try Self.webhookURL(webhook.url, field: field + ".url")
                if !seen.insert(WebhookTarget.label(of: url)).inserted {
                    fail(field + ".url", "\(WebhookTarget.label(of: url)) is listed twice; list each receiver once (with every event type it wants)")
                }
            } catch { found.append(error) }
            do throws(ConfigurationError) { _ = try Self.webhookSecret(webhook.secretFile, field: field + ".secretFile") } catch { found.append(error) }
            do throws(ConfigurationError) { _ = try Self.webhookEventTypes(webhook.events, field: field + ".events") } catch { found.append(error) }
        }
        return found
    }

    /// The webhook receivers as the server uses them, secrets read.
    func webhookTargets() throws(ConfigurationError) -> [WebhookTarget] {
        var targets: [WebhookTarget] = []
        for (n, webhook) in webhooks.enumerated() {
            let field = "webhooks[\(n)]"
            targets.append(WebhookTarget(url: try Self.webhookURL(webhook.url, field: field + ".url"),
                                         secret: try Self.webhookSecret(webhook.secretFile, field: field + ".secretFile"),
                                         eventTypes: try Self.webhookEventTypes(webhook.events, field: field + ".events")))
        }
        return targets
    }

    static func webhookURL(_ text: String, field: String) throws(ConfigurationError) -> URL {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = url.host, !host.isEmpty else {
            throw ConfigurationError(.invalidValue, field: field,
                                     "\"\(text)\" is not an http or https URL; write it whole, e.g. https://hooks.example.com/recordings")
        }
        return url
    }

    /// The secret in `path`. It signs every post, so a file every user of the host may read
    /// is refused, as are a missing, empty or short one.
    static func webhookSecret(_ path: String, field: String) throws(ConfigurationError) -> String {
        let secret: String
        do { secret = try readSecret(path, field: field) } catch {
            throw ConfigurationError(.invalidValue, field: field, error.message + "; point secretFile at a file holding the " +
                                     "receiver's secret, e.g. made with `openssl rand -hex 32 > \(path) && chmod 600 \(path)`")
        }
        var info = stat()
        if stat(path, &info) == 0, info.st_mode & 0o004 != 0 {
            throw ConfigurationError(.invalidValue, field: field,
                                     "\(path) is readable by every user of this host; `chmod 600 \(path)` (owned by the server's user)")
        }
        if let problem = tokenProblem(secret) {
            throw ConfigurationError(.invalidValue, field: field, "the secret in \(path) \(problem)")
        }
        return secret
    }

    /// The types named (nil: every type); an unknown name is an error listing the known ones.
    static func webhookEventTypes(_ names: [String]?, field: String) throws(ConfigurationError) -> Set<ServerEvent.Kind>? {
        guard let names else { return nil }
        let known = ServerEvent.Kind.allCases.map(\.rawValue).joined(separator: ", ")
        guard !names.isEmpty else {
            throw ConfigurationError(.invalidValue, field: field, "is empty; list the event types to post (\(known)), or leave it out for all")
        }
        var types: Set<ServerEvent.Kind> = []
        for name in names {
            guard let type = ServerEvent.Kind(rawValue: name) else {
                throw ConfigurationError(.invalidValue, field: field, "\"\(name)\" is not an event type; use \(known)")
            }
            types.insert(type)
        }
        return types
    }
}

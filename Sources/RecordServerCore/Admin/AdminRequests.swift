import AdminModels
import Foundation
import Shared

/// Parsing and validation of admin API input. Everything here is strict on purpose: an unknown
/// query parameter or body key is far more likely a typo (`state=` for `status=`) than a wish
/// to be ignored, and silently ignoring it would return the wrong recordings.
enum AdminRequests {
    static let defaultLimit = 1000
    static let limitRange = 1...10_000
    /// Longest id accepted in a path or body; real ids are far shorter (protocol identifiers).
    static let maxIDLength = 256

    // MARK: GET /v1/recordings

    static let recordingQueryKeys: Set<String> = ["agent", "status", "since", "until", "label", "limit"]

    /// Builds the catalog filter from the query string's `(key, value)` pairs (values already
    /// percent-decoded).
    /// `key` or `key=value`: a label key is a protocol identifier (§4.4) and its value at most
    /// the protocol's string length, so any other text can match no session and is refused.
    static func labelMatch(_ text: String) throws(AdminAPIError) -> RecordingFilter.LabelMatch {
        let parts = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        let key = String(parts[0]), value = parts.count == 2 ? String(parts[1]) : nil
        // (The identifier's own error is dropped for one that names the parameter.)
        guard (try? Identifier(validating: key)) != nil else {
            throw .badRequest("invalid label \"\(text)\"; expected key or key=value, the key 1 to 64 of A-Z a-z 0-9 . _ - starting with a letter or digit")
        }
        if let value, value.utf8.count > ProtocolLimits().maxStringBytes {
            throw .badRequest("label value longer than \(ProtocolLimits().maxStringBytes) bytes")
        }
        return .init(key: key, value: value)
    }

    static func recordingFilter(_ query: [(key: String, value: String)]) throws(AdminAPIError) -> RecordingFilter {
        var seen: Set<String> = []
        for (key, _) in query {
            guard recordingQueryKeys.contains(key) else {
                throw .badRequest("unknown query parameter \"\(key)\"; expected one of agent, status, since, until, label, limit")
            }
            guard seen.insert(key).inserted else { throw .badRequest("query parameter \"\(key)\" given more than once") }
        }
        let values = Dictionary(query.map { ($0.key, $0.value) }, uniquingKeysWith: { first, _ in first })

        var filter = RecordingFilter(limit: defaultLimit)
        if let agent = values["agent"] {
            // Agent ids are protocol identifiers: any other text can name no agent, so it is a
            // typo to report, not a filter that silently matches nothing. (The identifier's own
            // error is dropped for one that names the parameter.)
            let id = try validatedID(agent, what: "agent")
            guard (try? Identifier(validating: id)) != nil else {
                throw .badRequest("invalid agent \"\(id)\"; expected an agent id: 1 to 64 of A-Z a-z 0-9 . _ - starting with a letter or digit")
            }
            filter.agentID = id
        }
        if let status = values["status"] {
            guard let parsed = RecordingStatus(rawValue: status) else {
                let allowed = RecordingStatus.allCases.map(\.rawValue).joined(separator: ", ")
                throw .badRequest("invalid status \"\(status)\"; expected one of \(allowed)")
            }
            filter.status = parsed
        }
        if let since = values["since"] { filter.since = try date(since, name: "since") }
        if let until = values["until"] { filter.until = try date(until, name: "until") }
        if let since = filter.since, let until = filter.until, since > until {
            throw .badRequest("since must not be later than until")
        }
        if let label = values["label"] { filter.label = try labelMatch(label) }
        if let limit = values["limit"] {
            guard let parsed = Int(limit), limitRange.contains(parsed) else {
                throw .badRequest("invalid limit \"\(limit)\"; expected an integer from \(limitRange.lowerBound) to \(limitRange.upperBound)")
            }
            filter.limit = parsed
        }
        return filter
    }

    static func date(_ text: String, name: String) throws(AdminAPIError) -> Date {
        guard let date = AdminDates.parse(text) else {
            throw .badRequest("invalid \(name) \"\(text)\"; expected an ISO-8601 date-time such as 2024-05-01T10:00:00Z")
        }
        return date
    }

    static func validatedID(_ id: String, what: String) throws(AdminAPIError) -> String {
        guard !id.isEmpty else { throw .badRequest("\(what) must not be empty") }
        guard id.utf8.count <= maxIDLength else { throw .badRequest("\(what) is longer than \(maxIDLength) bytes") }
        return id
    }

    // MARK: POST /v1/sessions

    /// The body as the shared `StartSessionRequest`, its agent id checked.
    /// The most agents one session may span.
    static let maxAgentsPerSession = 16

    static func startSession(_ body: Data) throws(AdminAPIError) -> StartSessionRequest {
        guard !body.isEmpty else {
            throw .badRequest(#"request body is required: {"agent":"<agent id>","labels":{"key":"value"}}"#)
        }
        let decoded: StartSessionRequest
        do {
            decoded = try AdminJSON.decoder().decode(StartSessionRequest.self, from: body)
        } catch let error as StartSessionRequest.UnknownFields {
            throw .badRequest(error.message)
        } catch let error as DecodingError {
            throw .badRequest(describe(error))
        } catch {
            throw .badRequest("malformed JSON body")
        }
        guard decoded.agents.count <= maxAgentsPerSession else {
            throw .badRequest("\(decoded.agents.count) agents; a session takes at most \(maxAgentsPerSession)")
        }
        var agents: [String] = []
        for agent in decoded.agents { agents.append(try validatedID(agent, what: "agent")) }
        guard Set(agents).count == agents.count else { throw .badRequest("an agent is named twice in agents") }
        return StartSessionRequest(agents: agents, labels: decoded.labels)
    }

    /// Turns a decoding failure into a message naming the offending field.
    static func describe(_ error: DecodingError) -> String {
        func path(_ keys: [any CodingKey]) -> String {
            keys.map(\.stringValue).joined(separator: ".")
        }
        switch error {
        case .dataCorrupted(let context) where context.codingPath.isEmpty:
            return "malformed JSON body"
        case .dataCorrupted(let context):
            // Our own models say what is wrong (StartSessionRequest: "give agent or agents, not both").
            let why = context.debugDescription.isEmpty || context.underlyingError != nil ? "" : ": \(context.debugDescription)"
            return "invalid value at \(path(context.codingPath))\(why)"
        case .keyNotFound(let key, let context):
            let prefix = context.codingPath.isEmpty ? "" : path(context.codingPath) + "."
            return "missing field \"\(prefix)\(key.stringValue)\""
        case .typeMismatch(let type, let context), .valueNotFound(let type, let context):
            let field = path(context.codingPath)
            let expected = type == String.self ? "a string" : (type is [String: String].Type ? "an object of strings" : "\(type)")
            return field.isEmpty ? "body must be a JSON object" : "field \"\(field)\" must be \(expected)"
        @unknown default:
            return "malformed JSON body"
        }
    }
}

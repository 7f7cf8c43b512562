import Foundation

/// Decoding that refuses what it does not understand. A misspelt key in a configuration file
/// would otherwise be ignored without a word and its default used, which is how a setting
/// "does nothing". Every configuration file of record-server, capture-agent and recordctl
/// goes through here; the message names the key, suggests the near miss and lists the keys
/// that exist.
public enum StrictDecoding {
    /// Any key, so the keys actually present can be listed.
    public struct AnyKey: CodingKey {
        public var stringValue: String
        public var intValue: Int?
        public init(stringValue: String) { self.stringValue = stringValue }
        public init?(intValue: Int) {
            self.stringValue = String(intValue)
            self.intValue = intValue
        }
    }

    /// Keys an object held that its type does not have.
    public struct UnknownKeys: Error, Sendable, Equatable, CustomStringConvertible {
        /// Their full paths (`video.presett`).
        public var fields: [String]
        /// What to tell the operator: the keys, near misses, where, and the known keys.
        public var message: String
        public var description: String { message }
    }

    /// The keys of the object being decoded that `known` lacks, or nil when there are none.
    public static func unknownKeys<Key: CodingKey & CaseIterable>(in decoder: any Decoder, known: Key.Type) throws -> UnknownKeys? {
        let present = try decoder.container(keyedBy: AnyKey.self).allKeys.map(\.stringValue)
        // An array element is named by its index, as in `path(_:_:)`: `webhooks[0]`, not `webhooks.Index 0`.
        let place = decoder.codingPath.map { key in key.intValue.map { "[\($0)]" } ?? key.stringValue }
        return unknownKeys(present, known: Key.allCases.map(\.stringValue), at: place)
    }

    /// As above, for a JSON object already parsed (`JSONSerialization`): checks `object` and,
    /// for the keys `nested` names, the objects under them.
    public static func unknownKeys(inJSON object: [String: Any], schema: Schema, at codingPath: [String] = []) -> UnknownKeys? {
        if let found = unknownKeys(Array(object.keys), known: schema.keys, at: codingPath) { return found }
        for (key, child) in schema.nested {
            guard let value = object[key] as? [String: Any] else { continue }
            if let found = unknownKeys(inJSON: value, schema: child, at: codingPath + [key]) { return found }
        }
        return nil
    }

    /// The keys of one JSON object, and the schemas of the objects under some of them.
    public struct Schema: Sendable {
        public var keys: [String]
        public var nested: [String: Schema]
        public init<Key: CodingKey & CaseIterable>(_ keys: Key.Type, nested: [String: Schema] = [:]) {
            self.keys = keys.allCases.map(\.stringValue)
            self.nested = nested
        }
    }

    static func unknownKeys(_ present: [String], known: [String], at codingPath: [String]) -> UnknownKeys? {
        let unknown = present.filter { !known.contains($0) }.sorted()
        guard !unknown.isEmpty else { return nil }
        let described = unknown.map { name in
            suggestion(for: name, among: known).map { "\"\(name)\" (did you mean \"\($0)\"?)" } ?? "\"\(name)\""
        }
        func dotted(_ path: [String]) -> String { path.joined(separator: ".").replacingOccurrences(of: ".[", with: "[") }
        let place = codingPath.isEmpty ? "at the top level" : "in \"\(dotted(codingPath))\""
        let message = "unknown key\(unknown.count == 1 ? "" : "s") \(described.joined(separator: ", ")) \(place); "
            + "remove or correct \(unknown.count == 1 ? "it" : "them"). Known keys: \(known.joined(separator: ", "))"
        return UnknownKeys(fields: unknown.map { dotted(codingPath + [$0]) }, message: message)
    }

    /// `ingest.port`-style path of a coding path (plus an optional last key).
    public static func path(_ codingPath: [any CodingKey], _ last: (any CodingKey)? = nil) -> String {
        (codingPath + (last.map { [$0] } ?? [])).map { key in key.intValue.map { "[\($0)]" } ?? key.stringValue }
            .joined(separator: ".").replacingOccurrences(of: ".[", with: "[")
    }

    /// The known key closest to a misspelt one: same text ignoring case, an abbreviation or
    /// extension of it (`dataDir`), or at most two edits away.
    public static func suggestion(for name: String, among known: [String]) -> String? {
        let lower = name.lowercased()
        if let match = known.first(where: { $0.lowercased() == lower }) { return match }
        if lower.count >= 3, let match = known.first(where: { $0.lowercased().hasPrefix(lower) || lower.hasPrefix($0.lowercased()) }) {
            return match
        }
        let scored = known.map { ($0, editDistance(name.lowercased(), $0.lowercased())) }.filter { $0.1 <= 2 }
        return scored.min { $0.1 < $1.1 }?.0
    }

    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0 ... b.count)
        for i in 1 ... a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1 ... b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}

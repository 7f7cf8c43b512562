public import GRDB

// The catalog's rows are the models themselves, read and written through their `Codable`
// conformance (GRDB's Codable records): a column per property, with these conventions:
// dates as seconds since 1970 (REAL; the schema's type, and what the filters compare with),
// a session's labels as one JSON object with sorted keys (GRDB's JSON encoder sorts them: the
// same labels always store the same text, and `json_each` can search it), statuses as their
// raw values. A row that does not decode (an unknown status, labels that are not a JSON object
// of strings) is a `CatalogError` `.corruptRow` (Catalog.wrap).

extension AgentRecord: FetchableRecord, PersistableRecord {
    public static let databaseTableName = "agents"
    public static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy { .timeIntervalSince1970 }
    public static func databaseDateEncodingStrategy(for column: String) -> DatabaseDateEncodingStrategy { .timeIntervalSince1970 }
}

extension SessionRecord: FetchableRecord, PersistableRecord {
    public static let databaseTableName = "sessions"
    public static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy { .timeIntervalSince1970 }
    public static func databaseDateEncodingStrategy(for column: String) -> DatabaseDateEncodingStrategy { .timeIntervalSince1970 }
}

extension RecordingRecord: FetchableRecord, PersistableRecord {
    public static let databaseTableName = "recordings"
    public static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy { .timeIntervalSince1970 }
    public static func databaseDateEncodingStrategy(for column: String) -> DatabaseDateEncodingStrategy { .timeIntervalSince1970 }
}

extension TrackRecord: FetchableRecord, PersistableRecord {
    public static let databaseTableName = "tracks"
}

extension ServerRecord: FetchableRecord, PersistableRecord {
    public static let databaseTableName = "servers"
    public static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy { .timeIntervalSince1970 }
    public static func databaseDateEncodingStrategy(for column: String) -> DatabaseDateEncodingStrategy { .timeIntervalSince1970 }
}

extension UploadRecord: FetchableRecord, PersistableRecord {
    public static let databaseTableName = "uploads"
    public static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy { .timeIntervalSince1970 }
    public static func databaseDateEncodingStrategy(for column: String) -> DatabaseDateEncodingStrategy { .timeIntervalSince1970 }
}

/// A catalog operation that failed. GRDB/SQLite and PostgreSQL errors are wrapped so callers see one error
/// type with a stable `code` and a message that names the operation; the SQLite text is kept
/// in `underlying` for logs.
public struct CatalogError: Error, Sendable, Equatable, CustomStringConvertible {
    enum Code: String, Sendable, Equatable {
        /// The database file could not be created, opened or given its permissions.
        case openFailed
        /// The schema could not be brought up to date.
        case migrationFailed
        /// The file was written by a newer record-server whose schema this build does not know.
        case newerSchema
        /// An insert collided with an existing row (for example a session id used twice).
        case conflict
        /// The row to update does not exist.
        case notFound
        /// A stored value cannot be decoded (an unknown status, malformed labels JSON).
        case corruptRow
        /// Any other database failure (disk full, I/O error, busy beyond the timeout, a lost
        /// connection to PostgreSQL).
        case queryFailed
    }

    var code: Code
    /// What was being done, in words an operator can act on.
    var message: String
    /// The wrapped error's description, if any.
    var underlying: String?
    /// PostgreSQL's SQLSTATE when the database answered with an error (nil for SQLite, and
    /// for a connection that failed before any answer).
    var serverState: String?

    init(_ code: Code, _ message: String, underlying: String? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    public var description: String {
        "catalog \(code.rawValue): \(message)" + (underlying.map { " (\($0))" } ?? "")
    }
}

extension CatalogError {
    /// `error` itself when it is one (both backends throw only `CatalogError`; the protocol's
    /// untyped `throws` lets test doubles throw others), or a `.queryFailed` carrying it.
    init(wrapping error: any Error) {
        if let error = error as? CatalogError {
            self = error
        } else {
            self.init(.queryFailed, "catalog operation failed", underlying: "\(error)")
        }
    }
}

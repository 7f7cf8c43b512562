import Foundation

/// Where the catalog lives. The embedded SQLite file in the data directory is the default and
/// all one host needs; a PostgreSQL database (`--catalog postgresql://…`, config key `catalog`)
/// is for servers that share one catalog (docs/operations.md, "A catalog in PostgreSQL").
public enum CatalogLocation: Sendable, Equatable, CustomStringConvertible {
    /// `<dataDir>/catalog.sqlite`.
    case embedded
    case postgres(PostgresCatalogAddress)

    /// Reads `--catalog` / the config key: `sqlite` (or empty) for the embedded file, or a
    /// `postgresql://` / `postgres://` URL.
    /// - Throws: `CatalogLocationError` naming what is wrong and what is expected.
    public init(parsing text: String) throws(CatalogLocationError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.isEmpty || trimmed == "sqlite" {
            self = .embedded
        } else if trimmed.hasPrefix("postgresql://") || trimmed.hasPrefix("postgres://") {
            self = .postgres(try PostgresCatalogAddress(parsing: trimmed))
        } else {
            throw CatalogLocationError("catalog \"\(Self.redacted(trimmed))\" is neither \"sqlite\" nor a postgresql:// URL; " +
                                       "use sqlite (the default, a file in the data directory) or " +
                                       "postgresql://USER@HOST:PORT/DATABASE?password_file=PATH")
        }
    }

    public var description: String {
        switch self {
        case .embedded: "sqlite (catalog.sqlite in the data directory)"
        case .postgres(let address): address.description
        }
    }

    /// `text` with whatever stands between `://` and `@` hidden: an unparsable URL may still hold a password.
    static func redacted(_ text: String) -> String {
        guard let scheme = text.range(of: "://"), let at = text.range(of: "@", range: scheme.upperBound..<text.endIndex) else { return text }
        return text[..<scheme.upperBound] + "***" + text[at.lowerBound...]
    }
}

/// A `--catalog` value that cannot be used; the message says what to write instead.
public struct CatalogLocationError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

import Logging
import Testing
import TestSupport
@testable import RecordServerCore

/// The catalog's two backends, for tests that must hold on both.
enum CatalogBackend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgresql

    var testDescription: String { rawValue }

    /// What `ServerConfiguration.catalog` says for a fresh catalog on this backend.
    func configurationValue() async throws -> String {
        switch self {
        case .sqlite: "sqlite"
        case .postgresql: try await TestPostgres.shared().createDatabase()
        }
    }

    /// An empty catalog: SQLite in memory, or a fresh database in the test process's PostgreSQL.
    func makeCatalog() async throws -> any RecordingCatalog {
        switch self {
        case .sqlite: try Catalog.inMemory()
        case .postgresql: try PostgresCatalog(address: PostgresCatalogAddress(parsing: await TestPostgres.shared().createDatabase()),
                                              logger: quietLogger)
        }
    }
}

extension CatalogBackend {
    /// Two catalogs of two servers on one store (an SQLite file, a PostgreSQL database), and
    /// what keeps the file's directory until the caller lets it go.
    func makeSharedCatalogs(_ first: String, _ second: String) async throws -> (any RecordingCatalog, any RecordingCatalog, TemporaryDirectory?) {
        switch self {
        case .sqlite:
            let scratch = try TemporaryDirectory(prefix: "shared-catalog")
            let path = scratch.file("catalog.sqlite")
            return (try Catalog(path: path, serverID: first), try Catalog(path: path, serverID: second), scratch)
        case .postgresql:
            let address = try PostgresCatalogAddress(parsing: await TestPostgres.shared().createDatabase())
            return (try PostgresCatalog(address: address, serverID: first, logger: quietLogger),
                    try PostgresCatalog(address: address, serverID: second, logger: quietLogger), nil)
        }
    }
}

let quietLogger = Logger(label: "catalog-tests") { _ in SwiftLogNoOpLogHandler() }

extension ServerFixture {
    /// A fixture whose server keeps its catalog on `backend` (a fresh database for PostgreSQL).
    static func with(catalog backend: CatalogBackend) async throws -> ServerFixture {
        let fixture = try ServerFixture()
        fixture.configuration.catalog = try await backend.configurationValue()
        return fixture
    }

    /// The server's catalog, wherever `configuration.catalog` puts it, opened anew (as a
    /// restarted server or an operator's tool would read it).
    func serverCatalog() throws -> any RecordingCatalog {
        switch try configuration.catalogLocation() {
        case .embedded: try catalog()
        case .postgres(let address): try PostgresCatalog(address: address, logger: quietLogger)
        }
    }
}

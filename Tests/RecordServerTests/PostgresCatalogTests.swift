import Foundation
import Testing
import TestSupport
@testable import RecordServerCore

/// What only the PostgreSQL backend has: its URL, its connection (authentication, a lost
/// connection, a database that went away) and its migrations shared by servers that start
/// together. Its rows and queries are `CatalogTests`, run on both backends.
@Suite("Catalog in PostgreSQL")
struct PostgresCatalogTests {
    // MARK: The URL

    @Test func urlsReadAsLibpqReadsThem() async throws {
        let tcp = try PostgresCatalogAddress(parsing: "postgresql://rec@db.example:6432/cat?password_file=/etc/pw&connect_timeout=3")
        #expect(tcp.endpoint == .tcp(host: "db.example", port: 6432))
        #expect(tcp.user == "rec" && tcp.database == "cat" && tcp.password == .file("/etc/pw") && tcp.connectTimeoutSeconds == 3)
        #expect(tcp.tls == .prefer, "libpq's default over TCP")

        let socket = try PostgresCatalogAddress(parsing: "postgres://rec@/cat?host=/run/pg&port=5433")
        #expect(socket.endpoint == .unixSocket(path: "/run/pg/.s.PGSQL.5433"))
        #expect(socket.tls == .disable, "never TLS over a socket")

        let bare = try PostgresCatalogAddress(parsing: "postgresql:///cat")
        #expect(bare.endpoint == .unixSocket(path: "/var/run/postgresql/.s.PGSQL.5432"), "Debian's socket directory")

        let named = try PostgresCatalogAddress(parsing: "postgresql://rec@h")
        #expect(named.database == "rec" && named.endpoint == .tcp(host: "h", port: 5432), "the database is named as the user")
        #expect(try CatalogLocation(parsing: "sqlite") == .embedded && CatalogLocation(parsing: "") == .embedded)
    }

    @Test func aPasswordNeverShowsInWhatIsPrinted() async throws {
        let address = try PostgresCatalogAddress(parsing: "postgresql://rec:s3cret@h:5432/cat")
        #expect(address.password == .inline("s3cret"))
        #expect(address.description == "postgresql://rec:***@h:5432/cat")
        let wrong = #expect(throws: CatalogLocationError.self) { try CatalogLocation(parsing: "mysql://rec:s3cret@h/cat") }
        #expect(wrong?.description.contains("s3cret") == false)
        #expect(wrong?.description.contains("mysql://***@h/cat") == true, "\(wrong?.description ?? "")")
    }

    @Test(arguments: [
        ("postgresql://h/cat?sslmode=maybe", "sslmode=maybe is not one of"),
        ("postgresql://h/cat?sslmode=verify-full", "needs sslrootcert"),
        ("postgresql:///cat?host=/s&sslmode=require", "never uses TLS there"),
        ("postgresql://h/cat?pool=3", "unknown parameter pool"),
        ("postgresql://h/cat?host=relative", "absolute socket directory"),
        ("postgresql://u:p@h/cat?password_file=/f", "keep password_file"),
        ("postgresql://h:0/cat", "port 0 is out of range"),
        ("postgresql://h/cat?connect_timeout=0", "1–300 seconds"),
        ("postgresql://h/cat?host=", "has no value"),
    ])
    func badURLsSayWhatToWrite(_ url: String, _ expected: String) {
        let error = #expect(throws: CatalogLocationError.self) { try CatalogLocation(parsing: url) }
        #expect(error?.description.contains(expected) == true, "\(error?.description ?? "no error")")
    }

    @Test func theConfigurationNamesTheCatalogField() {
        var configuration = ServerConfiguration()
        configuration.catalog = "postgresql://h/cat?sslmode=maybe"
        let problem = configuration.problems().first { $0.field == "catalog" }
        #expect(problem?.description.contains("sslmode=maybe") == true, "\(configuration.problems())")
    }

    // MARK: The connection

    @Test func aWrongPasswordOrAMissingPasswordFileFailsNamingTheFix() async throws {
        let postgres = try await TestPostgres.shared()
        let scratch = try TemporaryDirectory(prefix: "pg-password")
        let wrong = try scratch.write("not-the-password\n", to: "password")
        let url = "postgresql://recorder@127.0.0.1:\(postgres.port)/catalog?password_file=\(wrong)&sslmode=disable"
        let refused = #expect(throws: CatalogError.self) {
            _ = try PostgresCatalog(address: PostgresCatalogAddress(parsing: url), logger: quietLogger)
        }
        #expect(refused?.code == .openFailed)
        #expect(refused?.message.contains("password_file") == true, "\(refused?.description ?? "")")
        #expect(refused?.description.contains("not-the-password") == false)

        let missing = #expect(throws: CatalogError.self) {
            _ = try PostgresCatalog(address: PostgresCatalogAddress(parsing: url.replacingOccurrences(of: wrong, with: wrong + ".gone")),
                                    logger: quietLogger)
        }
        #expect(missing?.code == .openFailed)
        #expect(missing?.message.contains("cannot read the catalog's password_file") == true, "\(missing?.description ?? "")")
    }

    @Test func nobodyListeningIsAnOpenFailureNamingTheAddress() async throws {
        let port = try freeTCPPort()
        let error = #expect(throws: CatalogError.self) {
            _ = try PostgresCatalog(address: PostgresCatalogAddress(parsing: "postgresql://rec@127.0.0.1:\(port)/cat?sslmode=disable"),
                                    logger: quietLogger)
        }
        #expect(error?.code == .openFailed)
        #expect(error?.message.contains("127.0.0.1:\(port)") == true, "\(error?.description ?? "")")
    }

    @Test func aLostConnectionIsOpenedAgainByTheNextCall() async throws {
        let postgres = try await TestPostgres.shared()
        let url = try await postgres.createDatabase()
        let database = TestPostgres.database(of: url)
        let catalog = try PostgresCatalog(address: PostgresCatalogAddress(parsing: url), logger: quietLogger)
        try catalog.insertSession(SessionRecord(id: "s1", agentID: "cam", labels: [:], status: .recording, createdAt: Date(), directory: "/d"))

        // What a database restart or a failover does to the server's connection.
        let killed = try await postgres.psql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '\(database)'")
        #expect(killed == "1")
        // pg_terminate_backend only signals the backend: wait until it is gone.
        for _ in 0..<200 {
            guard try await postgres.psql("SELECT count(*) FROM pg_stat_activity WHERE datname = '\(database)'") != "0" else { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        // The first call may be the one that finds the connection gone; the one after it connects afresh.
        var answers: [Result<SessionRecord?, any Error>] = []
        for _ in 0..<2 { answers.append(Result { try catalog.session(id: "s1") }) }
        #expect(try answers.last?.get()?.id == "s1")
        if case .failure(let first as CatalogError) = answers.first {
            #expect(first.code == .queryFailed, "\(first)")
        }
    }

    // MARK: Migrations

    @Test func serversStartingTogetherMigrateOnceAndKeepTheRows() async throws {
        let url = try await TestPostgres.shared().createDatabase()
        let address = try PostgresCatalogAddress(parsing: url)
        // Four servers open the same empty database at once: the advisory lock lets one migrate.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask { _ = try await offPool { try PostgresCatalog(address: address, logger: quietLogger) } }
            }
            try await group.waitForAll()
        }
        let catalog = try PostgresCatalog(address: address, logger: quietLogger)
        try catalog.upsertTrack(TrackRecord(sessionID: "s", trackID: 1, label: "a", kind: "video", codec: "h264", width: 2, height: 2))
        _ = try PostgresCatalog(address: address, logger: quietLogger)
        #expect(try catalog.tracks(sessionID: "s").count == 1)
        let database = TestPostgres.database(of: url)
        let applied = try await TestPostgres.shared().psql(#"SELECT string_agg("identifier", ',' ORDER BY "identifier") FROM catalog_migrations"#,
                                                     database: database)
        #expect(applied == PostgresCatalogSchema.migrations.map(\.identifier).sorted().joined(separator: ","))
    }

    @Test func aDatabaseMigratedByANewerServerIsRefused() async throws {
        let postgres = try await TestPostgres.shared()
        let url = try await postgres.createDatabase()
        let address = try PostgresCatalogAddress(parsing: url)
        _ = try PostgresCatalog(address: address, logger: quietLogger)
        let database = TestPostgres.database(of: url)
        try await postgres.psql(#"INSERT INTO catalog_migrations ("identifier", "appliedAt") VALUES ('v99-from-the-future', 0)"#, database: database)
        let error = #expect(throws: CatalogError.self) { _ = try PostgresCatalog(address: address, logger: quietLogger) }
        #expect(error?.code == .newerSchema)
        #expect(error?.message.contains("v99-from-the-future") == true)
    }

    @Test func recordingIdsOfTheFirstSchemaAreRenamedAsInSQLite() async throws {
        let postgres = try await TestPostgres.shared()
        let url = try await postgres.createDatabase()
        let database = TestPostgres.database(of: url)
        let address = try PostgresCatalogAddress(parsing: url)
        // What a server of the second schema left.
        try PostgresCatalogSchema.migrate(PostgresCatalogConnection(address: address, logger: quietLogger), upTo: "v2-session-durable-sequence")
        for (id, index) in [("s1-0", 0), ("s1-1", 1), ("s1-11", 11), ("hand-made", 2)] {
            try await postgres.psql("""
                INSERT INTO recordings ("id", "sessionID", "agentID", "segmentIndex", "path", "status", "createdAt")
                VALUES ('\(id)', 's1', 'cam', \(index), '/x', 'completed', 0)
                """, database: database)
        }
        let catalog = try PostgresCatalog(address: address, logger: quietLogger)
        #expect(try catalog.recordings(sessionID: "s1").map(\.id).sorted() == ["hand-made", "s1-0001", "s1-0002", "s1-0012"])
    }

    private func freeTCPPort() throws -> Int {
        let output = try runProcess("/usr/bin/python3", ["-c", "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"])
        return Int(output.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 1
    }
}

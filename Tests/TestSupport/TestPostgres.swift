import Foundation

/// A real PostgreSQL 15 (Debian's) for the tests that run the catalog on it: one cluster per
/// test process, started by `scripts/catalog-postgres.sh` on first use in a temporary directory
/// and stopped when the process exits. Each test takes a database of its own
/// (``createDatabase()``), so tests never see each other's rows.
public final class TestPostgres: Sendable {
    /// The cluster's directory (socket, data, logs, the `recorder` password file).
    public let directory: String
    public let port: Int

    nonisolated(unsafe) private static var started: TestPostgres?

    /// The process's cluster, started now if this is the first call. Started on a thread of
    /// its own (initdb takes seconds under load): a wait on the cooperative pool would hold one
    /// of its two threads, and with a second test waiting too, every server in the process
    /// would stall.
    /// - Throws: `ToolError` naming what is missing (PostgreSQL not installed: the test
    ///   command installs it) or the script's own message.
    public static func shared() async throws -> TestPostgres {
        try await Starter.shared.cluster()
    }

    /// Starts once; every caller gets the same cluster, or the same failure.
    private actor Starter {
        static let shared = Starter()
        private var start: Task<TestPostgres, any Error>?

        func cluster() async throws -> TestPostgres {
            if start == nil {
                start = Task {
                    let cluster = try await offPool { try TestPostgres() }
                    TestPostgres.started = cluster
                    atexit { TestPostgres.stopShared() }
                    return cluster
                }
            }
            return try await start!.value
        }
    }

    private init() throws {
        // Short: the socket's path must fit in 107 bytes.
        directory = "/tmp/mcr-pg-\(getpid())"
        let script = BuiltProducts.repositoryRoot.appendingPathComponent("scripts/catalog-postgres.sh").path
        let output = try runProcess(script, ["start", directory])
        // An unreadable port file means the script failed: the error below carries its output.
        guard output.status == 0, let port = Int((try? String(contentsOfFile: directory + "/port", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? "") else {
            throw ToolError.failed("scripts/catalog-postgres.sh start \(directory) (install PostgreSQL 15 with: " +
                                   "BOOTSTRAP_FOR_TESTS=1 source scripts/bootstrap.sh)", output)
        }
        self.port = port
    }

    private static func stopShared() {
        guard let server = started else { return }
        let script = BuiltProducts.repositoryRoot.appendingPathComponent("scripts/catalog-postgres.sh").path
        _ = try? runProcess(script, ["stop", server.directory]) // At exit nothing can report a failure; the directory is in /tmp.
        try? FileManager.default.removeItem(atPath: server.directory) // As above.
    }

    /// A new, empty database owned by `recorder`; returns its catalog URL (TCP, with the
    /// password file), as an operator would write it.
    public func createDatabase() async throws -> String {
        let name = "test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        try await psql("CREATE DATABASE \(name) OWNER recorder")
        return url(database: name)
    }

    /// The database a catalog URL names.
    public static func database(of url: String) -> String {
        String(URLComponents(string: url)?.path.dropFirst() ?? "")
    }

    /// The catalog URL of `database` as the `recorder` role over TCP.
    public func url(database: String) -> String {
        "postgresql://recorder@127.0.0.1:\(port)/\(database)?password_file=\(directory)/password&sslmode=disable"
    }

    /// The same database as the superuser over the Unix socket (no password).
    public func socketURL(database: String) -> String {
        "postgresql://postgres@/\(database)?host=\(directory)&port=\(port)"
    }

    /// Runs SQL as the superuser in `database` and returns psql's unaligned output (on a
    /// thread of its own, for the reason given at ``shared()``).
    @discardableResult
    public func psql(_ sql: String, database: String = "postgres") async throws -> String {
        let (directory, port) = (self.directory, self.port)
        return try await offPool { try Self.psql(sql, database: database, directory: directory, port: port) }
    }

    private static func psql(_ sql: String, database: String, directory: String, port: Int) throws -> String {
        var arguments = ["-h", directory, "-p", String(port), "-U", "postgres", "-d", database, "-v", "ON_ERROR_STOP=1", "-At", "-c", sql]
        var executable = "/usr/lib/postgresql/15/bin/psql"
        if geteuid() == 0 {
            arguments = ["-u", "postgres", "--", executable] + arguments
            executable = "/usr/sbin/runuser"
        }
        let output = try runProcess(executable, arguments)
        guard output.status == 0 else { throw ToolError.failed("psql \(sql)", output) }
        return output.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

import Foundation

/// A real PostgreSQL 15 (Debian's) for the tests that run the catalog on it: one cluster per
/// test process, started by `scripts/catalog-postgres.sh` on first use in a temporary directory
/// and stopped when the process exits. Each test takes a database of its own
/// (``createDatabase()``), so tests never see each other's rows.
public final class TestPostgres: Sendable {
    /// The cluster's directory (socket, data, logs, the `recorder` password file).
    public let directory: String
    public let port: Int

    private static let lock = NSLock()
    nonisolated(unsafe) private static var started: Result<TestPostgres, any Error>?

    /// The process's cluster, started now if this is the first call.
    /// - Throws: `ToolError` naming what is missing (PostgreSQL not installed: the test
    ///   command installs it) or the script's own message.
    public static func shared() throws -> TestPostgres {
        try lock.withLock {
            if let started { return try started.get() }
            let result = Result { try TestPostgres() }
            started = result
            if case .success = result { atexit { TestPostgres.stopShared() } }
            return try result.get()
        }
    }

    private init() throws {
        // Short: the socket's path must fit in 107 bytes.
        directory = "/tmp/mcr-pg-\(getpid())"
        let script = BuiltProducts.repositoryRoot.appendingPathComponent("scripts/catalog-postgres.sh").path
        let output = try runProcess(script, ["start", directory])
        guard output.status == 0, let port = Int((try? String(contentsOfFile: directory + "/port", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? "") else {
            throw ToolError.failed("scripts/catalog-postgres.sh start \(directory) (install PostgreSQL 15 with: " +
                                   "BOOTSTRAP_FOR_TESTS=1 source scripts/bootstrap.sh)", output)
        }
        self.port = port
    }

    private static func stopShared() {
        guard case .success(let server)? = started else { return }
        let script = BuiltProducts.repositoryRoot.appendingPathComponent("scripts/catalog-postgres.sh").path
        _ = try? runProcess(script, ["stop", server.directory]) // At exit nothing can report a failure; the directory is in /tmp.
        try? FileManager.default.removeItem(atPath: server.directory) // As above.
    }

    /// A new, empty database owned by `recorder`; returns its catalog URL (TCP, with the
    /// password file), as an operator would write it.
    public func createDatabase() throws -> String {
        let name = "test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        try psql("CREATE DATABASE \(name) OWNER recorder")
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

    /// Runs SQL as the superuser in `database` and returns psql's unaligned output.
    @discardableResult
    public func psql(_ sql: String, database: String = "postgres") throws -> String {
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

import Dispatch
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO

/// One connection to the catalog's PostgreSQL, used synchronously: `RecordingCatalog` is a
/// synchronous protocol (SQLite is), and its callers are actors on storage threads
/// (`StorageExecutor`). Statements run one at a time, in order; a connection that closed or
/// timed out is opened again by the next statement, so a restarted database costs the calls
/// made while it was down (ingest treats catalog failures as non-fatal and reconciles later).
///
/// The connection lives on an event loop of its own: a caller that blocks here may itself be
/// on an ingest event loop (a session's few catalog reads), and it must never wait for
/// work queued behind itself. The wait is a semaphore, bounded by ``statementTimeout``.
final class PostgresCatalogConnection: @unchecked Sendable {
    let address: PostgresCatalogAddress
    /// How long one statement (or connecting) may take before the caller gets `.queryFailed`.
    let statementTimeout: TimeAmount
    private let group: MultiThreadedEventLoopGroup
    private let lock = NIOLock()
    /// The open connection, if any; only touched under ``lock``.
    private var current: PostgresConnection?
    private let logger: Logger
    private let connectionIDs = NIOLockedValueBox(0)

    init(address: PostgresCatalogAddress, statementTimeout: TimeAmount = .seconds(15), logger: Logger) {
        self.address = address
        self.statementTimeout = statementTimeout
        self.logger = logger
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    }

    deinit {
        let group = self.group
        guard let current else {
            group.shutdownGracefully { _ in }
            return
        }
        Self.discard(current) { group.shutdownGracefully { _ in } }
    }

    /// Closes `connection`, keeping it alive until it has closed (postgres-nio requires a
    /// connection be closed before it goes away), then calls `then`.
    private static func discard(_ connection: PostgresConnection, then: @escaping @Sendable () -> Void = {}) {
        connection.close().whenComplete { _ in
            withExtendedLifetime(connection) {}
            // Off the connection's own event loop: `then` may shut that loop's group down.
            DispatchQueue.global().async(execute: then)
        }
    }

    /// Runs `body` with the connection, opening it first if needed; statements inside run in
    /// order and nobody else's run in between. `body` calls ``Session/run(_:_:)``.
    func withSession<T>(_ operation: String, _ body: (Session) throws(CatalogError) -> T) throws(CatalogError) -> T {
        // Held across the statements: the connection runs one conversation at a time.
        lock.lock()
        defer { lock.unlock() }
        let connection: PostgresConnection
        if let open = current, !open.isClosed {
            connection = open
        } else {
            connection = try connect(operation)
            current = connection
        }
        let session = Session(connection: connection, owner: self)
        do { return try body(session) } catch {
            // A statement that timed out or lost its connection leaves it in an unknown
            // state: drop it, the next call connects afresh.
            if session.broken {
                Self.discard(connection)
                current = nil
            }
            throw error
        }
    }

    /// Statements on one locked connection.
    final class Session {
        fileprivate let connection: PostgresConnection
        fileprivate unowned let owner: PostgresCatalogConnection
        fileprivate var broken = false

        fileprivate init(connection: PostgresConnection, owner: PostgresCatalogConnection) {
            self.connection = connection
            self.owner = owner
        }

        /// Runs one statement and returns its rows and the number of rows it changed.
        @discardableResult
        func run(_ operation: String, _ query: PostgresQuery) throws(CatalogError) -> PostgresQueryResult {
            do {
                return try owner.wait(connection.query(query, logger: owner.logger), operation)
            } catch {
                if error.code == .queryFailed || error.code == .openFailed { broken = !isServerReply(error) }
                throw error
            }
        }

        /// Runs `body` between BEGIN and COMMIT (ROLLBACK when it throws).
        func transaction<T>(_ operation: String, _ body: () throws(CatalogError) -> T) throws(CatalogError) -> T {
            try run(operation, "BEGIN")
            do {
                let result = try body()
                try run(operation, "COMMIT")
                return result
            } catch {
                if !broken { _ = try? run(operation, "ROLLBACK") } // The first error is the one to report; a failed rollback only drops the transaction, which the server does anyway.
                throw error
            }
        }

        private func isServerReply(_ error: CatalogError) -> Bool { error.serverState != nil }
    }

    private func connect(_ operation: String) throws(CatalogError) -> PostgresConnection {
        let password = try address.readPassword()
        var configuration: PostgresConnection.Configuration
        switch address.endpoint {
        case .unixSocket(let path):
            configuration = .init(unixSocketPath: path, username: address.user, password: password, database: address.database)
        case .tcp(let host, let port):
            configuration = .init(host: host, port: port, username: address.user, password: password, database: address.database,
                                  tls: try tlsSetting())
        }
        configuration.options.connectTimeout = .seconds(Int64(address.connectTimeoutSeconds))
        let id = connectionIDs.withLockedValue { id in
            id += 1
            return id
        }
        let connecting = PostgresConnection.connect(on: group.next(), configuration: configuration, id: id, logger: logger)
        do {
            return try wait(connecting, "connect for \(operation)", timeout: .seconds(Int64(address.connectTimeoutSeconds) + 1))
        } catch {
            // Given up on: should it still connect, close it.
            connecting.whenSuccess { Self.discard($0) }
            throw CatalogError(.openFailed, "cannot connect to the catalog at \(address) (for \(operation)); check that PostgreSQL runs " +
                               "there and accepts this user (pg_hba.conf), and the password or password_file",
                               underlying: error.underlying ?? error.message)
        }
    }

    private func tlsSetting() throws(CatalogError) -> PostgresConnection.Configuration.TLS {
        guard address.tls != .disable else { return .disable }
        var tls = TLSConfiguration.makeClientConfiguration()
        if address.tls == .verifyFull, let root = address.rootCertificatePath {
            tls.trustRoots = .file(root)
        } else {
            // libpq's prefer and require encrypt without checking who answers.
            tls.certificateVerification = .none
        }
        do {
            let context = try NIOSSLContext(configuration: tls)
            return address.tls == .prefer ? .prefer(context) : .require(context)
        } catch {
            throw CatalogError(.openFailed, "cannot set up TLS for the catalog at \(address)", underlying: "\(error)")
        }
    }

    /// Blocks until `future` completes or the timeout passes.
    fileprivate func wait<T: Sendable>(_ future: EventLoopFuture<T>, _ operation: String, timeout: TimeAmount? = nil) throws(CatalogError) -> T {
        let done = DispatchSemaphore(value: 0)
        let result = NIOLockedValueBox<Result<T, any Error>?>(nil)
        future.whenComplete { outcome in
            result.withLockedValue { $0 = outcome }
            done.signal()
        }
        let limit = timeout ?? statementTimeout
        guard done.wait(timeout: .now() + .nanoseconds(Int(limit.nanoseconds))) == .success else {
            throw CatalogError(.queryFailed, "cannot \(operation): PostgreSQL at \(address) did not answer within \(limit.nanoseconds / 1_000_000_000) s")
        }
        switch result.withLockedValue({ $0 }) {
        case .success(let value): return value
        case .failure(let error): throw CatalogError(postgres: error, operation)
        case nil: throw CatalogError(.queryFailed, "cannot \(operation): no result")
        }
    }
}

extension CatalogError {
    /// Wraps a postgres-nio error: a unique violation is `.conflict`, anything else
    /// `.queryFailed`, with PostgreSQL's own message (and SQLSTATE) kept as `underlying`.
    init(postgres error: any Error, _ operation: String) {
        guard let error = error as? PSQLError else {
            self.init(.queryFailed, "cannot \(operation)", underlying: "\(error)")
            return
        }
        if let info = error.serverInfo, let state = info[.sqlState] {
            let text = (info[.message] ?? "") + (info[.detail].map { " — \($0)" } ?? "") + " (SQLSTATE \(state))"
            if state == "23505" {
                self.init(.conflict, "cannot \(operation): a row with the same id already exists", underlying: text)
            } else {
                self.init(.queryFailed, "cannot \(operation)", underlying: text)
            }
            serverState = state
            return
        }
        // No server reply: the connection failed or closed. PSQLError's description hides
        // details on purpose; its code and underlying error are what an operator can act on.
        self.init(.queryFailed, "cannot \(operation): the connection to PostgreSQL failed",
                  underlying: "\(error.code)" + (error.underlying.map { ": \($0)" } ?? ""))
    }
}

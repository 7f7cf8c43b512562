import Foundation

/// A PostgreSQL database named by a libpq-style URL:
/// `postgresql://[USER[:PASSWORD]@][HOST][:PORT][/DATABASE][?PARAM=VALUE&…]`.
///
/// Parameters (libpq's names where libpq has one):
/// - `host=/DIR`: connect through the Unix socket `DIR/.s.PGSQL.PORT` (also when the URL has no
///   host: Debian's `/var/run/postgresql`); `port=PORT` where the URL has no host to carry it.
/// - `password_file=PATH`: the password is the file's first line, so it stays out of
///   configuration files, process lists and logs (a password in the URL works too and is
///   never printed).
/// - `sslmode=disable|prefer|require|verify-full` (default `prefer` over TCP, as libpq;
///   a socket never uses TLS), `sslrootcert=PATH` for `verify-full`.
/// - `connect_timeout=SECONDS` (default 10).
///
/// Defaults as libpq's: port 5432, the user running the server, a database named as the user.
public struct PostgresCatalogAddress: Sendable, Equatable, CustomStringConvertible {
    public enum Endpoint: Sendable, Equatable {
        case tcp(host: String, port: Int)
        /// The socket file itself (`DIR/.s.PGSQL.PORT`).
        case unixSocket(path: String)
    }

    public enum TLSMode: String, Sendable, Equatable {
        case disable, prefer, require
        case verifyFull = "verify-full"
    }

    public var endpoint: Endpoint
    public var user: String
    public var database: String
    /// Nil when the server needs none (trust or peer authentication).
    public var password: Password?
    public var tls: TLSMode
    public var rootCertificatePath: String?
    public var connectTimeoutSeconds: Int

    /// Where the password comes from; only ``PostgresCatalogAddress/readPassword()`` reads the file.
    public enum Password: Sendable, Equatable {
        case inline(String)
        case file(String)
    }

    static let defaultSocketDirectory = "/var/run/postgresql"

    public init(parsing text: String) throws(CatalogLocationError) {
        let shown = CatalogLocation.redacted(text)
        guard let components = URLComponents(string: text), let scheme = components.scheme,
              scheme == "postgresql" || scheme == "postgres" else {
            throw CatalogLocationError("catalog \(shown) is not a URL; expected postgresql://USER@HOST:PORT/DATABASE")
        }
        var parameters: [String: String] = [:]
        for item in components.queryItems ?? [] {
            guard let value = item.value, !value.isEmpty else {
                throw CatalogLocationError("catalog \(shown): parameter \(item.name) has no value")
            }
            parameters[item.name] = value
        }
        let known: Set = ["host", "port", "password_file", "sslmode", "sslrootcert", "connect_timeout"]
        if let unknown = parameters.keys.sorted().first(where: { !known.contains($0) }) {
            throw CatalogLocationError("catalog \(shown): unknown parameter \(unknown); known: \(known.sorted().joined(separator: ", "))")
        }

        let port = components.port ?? parameters["port"].map { Int($0) ?? 0 } ?? 5432
        guard (1...65535).contains(port) else { throw CatalogLocationError("catalog \(shown): port \(port) is out of range") }
        let socketDirectory = parameters["host"] ?? (components.host?.isEmpty ?? true ? Self.defaultSocketDirectory : nil)
        if let socketDirectory {
            guard socketDirectory.hasPrefix("/") else {
                throw CatalogLocationError("catalog \(shown): host=\(socketDirectory) must be an absolute socket directory")
            }
            endpoint = .unixSocket(path: socketDirectory + "/.s.PGSQL.\(port)")
        } else {
            endpoint = .tcp(host: components.host ?? "", port: port)
        }

        user = components.user ?? Self.currentUserName()
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        database = path.isEmpty ? user : path
        guard !user.isEmpty, !database.isEmpty else { throw CatalogLocationError("catalog \(shown): no user or database") }

        switch (components.password, parameters["password_file"]) {
        case (.some, .some):
            throw CatalogLocationError("catalog \(shown): a password and password_file both given; keep password_file")
        case (.some(let inline), nil): password = .inline(inline)
        case (nil, .some(let file)): password = .file(file)
        case (nil, nil): password = nil
        }

        let defaultTLS: TLSMode = if case .unixSocket = endpoint { .disable } else { .prefer }
        guard let mode = TLSMode(rawValue: parameters["sslmode"] ?? defaultTLS.rawValue) else {
            throw CatalogLocationError("catalog \(shown): sslmode=\(parameters["sslmode"] ?? "") is not one of disable, prefer, require, verify-full")
        }
        if case .unixSocket = endpoint, mode != .disable {
            throw CatalogLocationError("catalog \(shown): sslmode=\(mode.rawValue) over a Unix socket; PostgreSQL never uses TLS there (drop sslmode)")
        }
        tls = mode
        rootCertificatePath = parameters["sslrootcert"]
        if mode == .verifyFull, rootCertificatePath == nil {
            throw CatalogLocationError("catalog \(shown): sslmode=verify-full needs sslrootcert=PATH (the CA that signed the server's certificate)")
        }
        guard let timeout = Int(parameters["connect_timeout"] ?? "10"), (1...300).contains(timeout) else {
            throw CatalogLocationError("catalog \(shown): connect_timeout must be 1–300 seconds")
        }
        connectTimeoutSeconds = timeout
    }

    /// The password, reading `password_file` now (its first line, without the line break).
    /// - Throws: `CatalogError` `.openFailed` naming the file.
    func readPassword() throws(CatalogError) -> String? {
        switch password {
        case nil: return nil
        case .inline(let text): return text
        case .file(let path):
            guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
                throw CatalogError(.openFailed, "cannot read the catalog's password_file \(path); check that it exists and this user may read it")
            }
            return text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        }
    }

    /// The URL without its password: what logs and errors show.
    public var description: String {
        let secret = password == nil ? "" : ":***"
        switch endpoint {
        case .tcp(let host, let port):
            return "postgresql://\(user)\(secret)@\(host):\(port)/\(database)"
        case .unixSocket(let path):
            return "postgresql://\(user)\(secret)@/\(database) (socket \(path))"
        }
    }

    private static func currentUserName() -> String {
        guard let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name else { return "postgres" }
        return String(cString: name)
    }
}

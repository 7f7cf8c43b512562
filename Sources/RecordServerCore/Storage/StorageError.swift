import Foundation

/// Why the storage layer refused or failed an operation. Every case names the path or value
/// involved, so a log line is enough to act on.
enum StorageError: Error, Sendable, Equatable, CustomStringConvertible {
    /// An identifier that would become a path component broke the identifier rules
    /// (1…64 of `[A-Za-z0-9._-]`, starting with a letter or digit). `field` is "agentID" or "sessionID".
    case invalidIdentifier(field: String, value: String)
    /// The path (after resolving symbolic links) would lie outside the data directory.
    case outsideDataDirectory(path: String, resolved: String)
    /// Something that must be a real directory is a file or a symbolic link.
    case notADirectory(path: String)
    /// The data directory must be an absolute path.
    case relativeDataDirectory(path: String)
    /// A system call failed; `operation` says which, `errno` says why.
    case systemCall(operation: String, path: String, errno: Int32)
    /// A file the server wrote holds something else than it should (a damaged disk, a hand edit).
    case damagedFile(path: String, reason: String)

    var description: String {
        switch self {
        case .invalidIdentifier(let field, let value):
            return "\(field) \"\(value)\" is not a valid identifier (1…64 of [A-Za-z0-9._-] starting with a letter or digit); " +
                "refusing to use it as a path component"
        case .outsideDataDirectory(let path, let resolved):
            return "\(path) resolves to \(resolved), which is outside the data directory; refusing to use it"
        case .notADirectory(let path):
            return "\(path) exists but is not a directory (or is a symbolic link, which the data directory never follows); " +
                "remove or rename it"
        case .relativeDataDirectory(let path):
            return "the data directory \"\(path)\" must be an absolute path"
        case .damagedFile(let path, let reason):
            return "\(path) is damaged: \(reason)"
        case .systemCall(let operation, let path, let code):
            return "\(operation) \(path) failed: \(String(cString: strerror(code))) (errno \(code))"
        }
    }
}

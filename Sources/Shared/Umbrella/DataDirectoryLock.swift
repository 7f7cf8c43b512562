import Foundation

/// An exclusive `flock` on `<dataDirectory>/record-server.lock`, held while a server runs.
///
/// Two servers on one data directory would each take the other's live recordings for
/// unfinished ones and finalize them under it (issue 13, finding 1). The kernel drops the
/// lock when the process ends however it ends (`kill -9` included), so a stale lock file
/// never blocks a restart. The file holds the holder's pid, for the refusal message.
public final class DataDirectoryLock: @unchecked Sendable {
    public static let fileName = "record-server.lock"

    /// Why the lock could not be taken.
    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// Another record-server (pid, when known) runs on this data directory.
        case inUse(directory: String, pid: Int32?)
        case systemCall(operation: String, path: String, errno: Int32)

        public var description: String {
            switch self {
            case .inUse(let directory, let pid):
                return "the data directory \(directory) is in use by another record-server (\(pid.map { "pid \($0)" } ?? "pid unknown")); " +
                    "two servers on one directory would finalize each other's live recordings. Stop that server, " +
                    "or give this one another dataDirectory"
            case .systemCall(let operation, let path, let code):
                return "\(operation) \(path) failed: \(String(cString: strerror(code))) (errno \(code))"
            }
        }
    }

    public let path: String
    private let lock = NSLock()
    private var descriptor: Int32

    /// Takes the lock or throws ``Failure/inUse(directory:pid:)`` at once.
    public init(dataDirectory: String) throws(Failure) {
        path = dataDirectory + "/" + Self.fileName
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .systemCall(operation: "open", path: path, errno: errno) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            let holder = Self.readPID(fd)
            close(fd)
            if code == EWOULDBLOCK { throw .inUse(directory: dataDirectory, pid: holder) }
            throw .systemCall(operation: "flock", path: path, errno: code)
        }
        let pid = "\(getpid())\n"
        _ = ftruncate(fd, 0)
        _ = pid.withCString { pwrite(fd, $0, strlen($0), 0) }
        descriptor = fd
    }

    deinit { release() }

    /// Gives the lock up (the server stopped); idempotent.
    public func release() {
        lock.lock()
        defer { lock.unlock() }
        guard descriptor >= 0 else { return }
        close(descriptor)
        descriptor = -1
    }

    /// The pid of the running server that holds the data directory `file` lies in, if any:
    /// the nearest ancestor directory with a lock file whose lock is taken.
    public static func holder(ofFileIn file: String) -> Int32?? {
        var directory = (file as NSString).deletingLastPathComponent
        while !directory.isEmpty, directory != "/" {
            let candidate = directory + "/" + fileName
            let fd = open(candidate, O_RDONLY | O_CLOEXEC)
            if fd >= 0 {
                defer { close(fd) }
                // A shared lock is refused only while a server holds its exclusive one.
                if flock(fd, LOCK_SH | LOCK_NB) == 0 {
                    flock(fd, LOCK_UN)
                    return nil
                }
                return .some(readPID(fd))
            }
            directory = (directory as NSString).deletingLastPathComponent
        }
        return nil
    }

    private static func readPID(_ fd: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = pread(fd, &buffer, buffer.count, 0)
        guard count > 0 else { return nil }
        return Int32(String(decoding: buffer[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}

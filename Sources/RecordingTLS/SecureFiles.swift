#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a file could not be read or written. Carries the path so that the message a user
/// sees always names the file.
public enum FileAccessError: Error, Equatable, CustomStringConvertible {
    /// The file does not exist.
    case missing(path: String)
    /// The file exists but could not be read (permissions, I/O error, …).
    case unreadable(path: String, reason: String)
    /// The path names a directory where a file was expected.
    case isDirectory(path: String)
    /// The file or directory could not be created or written.
    case unwritable(path: String, reason: String)

    public var description: String {
        switch self {
        case .missing(let path): return "\(path): file does not exist"
        case .unreadable(let path, let reason): return "\(path): cannot read file (\(reason))"
        case .isDirectory(let path): return "\(path): is a directory, expected a file"
        case .unwritable(let path, let reason): return "\(path): cannot write (\(reason))"
        }
    }
}

/// Small POSIX helpers for key material. Foundation's `write(to:)` creates files with the
/// process umask (usually 0644) and would need a `chmod` afterwards, which leaves a window
/// in which a private key is world-readable; these helpers pass the final mode to `open`.
enum SecureFiles {
    /// Mode for private keys: owner read/write only.
    static let privateKeyMode: mode_t = 0o600
    /// Mode for certificates and other public files.
    static let publicFileMode: mode_t = 0o644
    /// Mode for directories holding key material.
    static let directoryMode: mode_t = 0o700

    static func errnoDescription(_ code: Int32 = errno) -> String {
        String(cString: strerror(code))
    }

    /// Reads a whole file, mapping failures to `FileAccessError` with the path.
    static func read(path: String) throws(FileAccessError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            let code = errno
            if code == ENOENT || code == ENOTDIR { throw .missing(path: path) }
            throw .unreadable(path: path, reason: errnoDescription(code))
        }
        defer { close(fd) }

        var info = stat()
        if fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
            throw .isDirectory(path: path)
        }

        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { posixRead(fd, $0.baseAddress, $0.count) }
            if n == 0 { break }
            if n < 0 {
                if errno == EINTR { continue }
                throw .unreadable(path: path, reason: errnoDescription())
            }
            result.append(contentsOf: chunk[0..<n])
        }
        return result
    }

    /// Writes `bytes` to `path` so that the file never exists with a wider mode than `mode`.
    ///
    /// The data goes to a fresh temporary file in the same directory, created with
    /// `O_CREAT | O_EXCL` and the final mode, and is then renamed over `path`. Truncating an
    /// existing file instead would keep that file's (possibly too wide) mode, and a reader
    /// could observe a half-written key; the rename is atomic on POSIX file systems.
    static func write(_ bytes: [UInt8], to path: String, mode: mode_t) throws(FileAccessError) {
        let temporary = "\(path).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        if fd < 0 { throw .unwritable(path: path, reason: errnoDescription()) }

        var failure: FileAccessError?
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { posixWrite(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                failure = .unwritable(path: path, reason: errnoDescription())
                break
            }
            offset += n
        }
        // fsync so that a crash right after `recordctl ca init` cannot leave an empty key file.
        if failure == nil, fsync(fd) != 0 {
            failure = .unwritable(path: path, reason: errnoDescription())
        }
        if close(fd) != 0, failure == nil {
            failure = .unwritable(path: path, reason: errnoDescription())
        }
        if failure == nil, rename(temporary, path) != 0 {
            failure = .unwritable(path: path, reason: errnoDescription())
        }
        if let failure {
            unlink(temporary)
            throw failure
        }
    }

    /// Creates `path` (and missing parents) with mode 0700. An existing directory is left
    /// as it is: it may be shared (e.g. `/etc`), and the key files in it are 0600 anyway.
    static func makeDirectory(_ path: String) throws(FileAccessError) {
        guard !path.isEmpty else { return }
        var prefix = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += component
            if mkdir(prefix, directoryMode) != 0 {
                let code = errno
                var info = stat()
                guard code == EEXIST, stat(prefix, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
                    throw .unwritable(path: prefix, reason: code == EEXIST ? "exists and is not a directory" : errnoDescription(code))
                }
            }
            prefix += "/"
        }
    }

    /// Joins a directory and a file name without doubling the separator.
    static func join(_ directory: String, _ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }
}

// `read` and `write` are shadowed by the static methods above inside `SecureFiles`; these
// aliases reach the C functions.
@inline(__always)
private func posixRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    read(fd, buffer, count)
}

@inline(__always)
private func posixWrite(_ fd: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int {
    write(fd, buffer, count)
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Files that live in memory, for paths under ``root``: ``RandomAccessFile`` keeps their bytes
/// here instead of on disk. The fuzz targets write, read, damage and recover thousands of
/// recordings a second this way; production paths never start with ``root``.
public enum MemoryFiles {
    /// Paths below this prefix are memory files (no such directory exists on disk).
    public static let root = "/.memory-files/"

    public static func contains(_ path: String) -> Bool { path.hasPrefix(root) }

    /// The bytes of one memory file. Shared by every handle open on the path, as a file is.
    final class File: @unchecked Sendable {
        private var bytes: [UInt8] = []
        private let lock = Lock()

        var size: UInt64 { lock.locked { UInt64(bytes.count) } }

        func write(_ data: [UInt8], at offset: UInt64) {
            lock.locked {
                let start = Int(clamping: offset), end = start + data.count
                if end > bytes.count { bytes.append(contentsOf: repeatElement(0, count: end - bytes.count)) }
                bytes.replaceSubrange(start ..< end, with: data)
            }
        }

        func read(count: Int, at offset: UInt64) -> [UInt8] {
            lock.locked {
                let start = min(Int(clamping: offset), bytes.count)
                return Array(bytes[start ..< min(start + max(count, 0), bytes.count)])
            }
        }

        func truncate(to length: UInt64) {
            lock.locked {
                let n = Int(clamping: length)
                if n < bytes.count { bytes.removeSubrange(n...) } else { bytes.append(contentsOf: repeatElement(0, count: n - bytes.count)) }
            }
        }

        /// Overwrites bytes in place (a damaged disk); bytes past the end are ignored.
        func damage(at offset: UInt64, byte: UInt8) {
            lock.locked { if offset < UInt64(bytes.count) { bytes[Int(offset)] = byte } }
        }
    }

    nonisolated(unsafe) private static var files: [String: File] = [:]
    private static let lock = Lock()

    static func open(_ path: String, create: Bool) throws(MuxerError) -> File {
        enum Opened { case file(File), exists, missing }
        let opened: Opened = lock.locked {
            if let file = files[path] { return create ? .exists : .file(file) }
            guard create else { return .missing }
            let file = File()
            files[path] = file
            return .file(file)
        }
        switch opened {
        case .file(let file): return file
        case .exists: throw MuxerError(.io, "open \(path): File exists", errno: EEXIST)
        case .missing: throw MuxerError(.io, "open \(path): No such file or directory", errno: ENOENT)
        }
    }

    public static func exists(_ path: String) -> Bool { lock.locked { files[path] != nil } }

    public static func remove(_ path: String) { lock.locked { _ = files.removeValue(forKey: path) } }

    static func rename(_ from: String, to: String) throws(MuxerError) {
        let moved: Bool = lock.locked {
            guard let file = files.removeValue(forKey: from) else { return false }
            files[to] = file
            return true
        }
        guard moved else { throw MuxerError(.io, "rename \(from): No such file or directory", errno: ENOENT) }
    }

    /// Overwrites single bytes of a memory file, as a damaged disk would.
    public static func damage(_ path: String, at offset: UInt64, byte: UInt8) {
        lock.locked { files[path] }?.damage(at: offset, byte: byte)
    }

    /// Paths of the memory files (those under `prefix`), sorted.
    public static func paths(under prefix: String = root) -> [String] {
        lock.locked { files.keys.filter { $0.hasPrefix(prefix) }.sorted() }
    }

    /// Forgets every memory file under `prefix` (all of them by default).
    public static func removeAll(under prefix: String = root) {
        lock.locked { files = files.filter { !$0.key.hasPrefix(prefix) } }
    }

    /// A pthread mutex: this module has no Foundation.
    final class Lock: @unchecked Sendable {
        private var mutex = pthread_mutex_t()
        init() { pthread_mutex_init(&mutex, nil) }
        deinit { pthread_mutex_destroy(&mutex) }
        func locked<T>(_ body: () throws -> T) rethrows -> T {
            pthread_mutex_lock(&mutex)
            defer { pthread_mutex_unlock(&mutex) }
            return try body()
        }
    }
}

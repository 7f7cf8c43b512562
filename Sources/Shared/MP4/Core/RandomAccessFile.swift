#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file opened for positioned reads and writes, closed in `deinit`. Every failure carries
/// its errno so a full disk (ENOSPC) is reported as exactly that.
public final class RandomAccessFile {
    public let path: String
    private var fd: Int32

    public enum OpenMode { case createNew(mode: UInt32), readWrite, readOnly }

    public init(path: String, mode: OpenMode) throws(MuxerError) {
        self.path = path
        switch mode {
        case let .createNew(permissions):
            fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode_t(permissions))
        case .readWrite:
            fd = open(path, O_RDWR | O_CLOEXEC)
        case .readOnly:
            fd = open(path, O_RDONLY | O_CLOEXEC)
        }
        guard fd >= 0 else { throw Self.error("open", path) }
    }

    deinit { if fd >= 0 { _ = Glibc.close(fd) } }

    public func close() {
        if fd >= 0 { _ = Glibc.close(fd) }
        fd = -1
    }

    static func error(_ operation: String, _ path: String) -> MuxerError {
        let code = errno
        return MuxerError(.io, "\(operation) \(path): \(String(cString: strerror(code)))", errno: code)
    }

    public func write(_ bytes: [UInt8], at offset: UInt64) throws(MuxerError) {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { buf in
                pwrite(fd, buf.baseAddress! + done, buf.count - done, off_t(offset) + off_t(done))
            }
            if n < 0 {
                if errno == EINTR { continue }
                throw Self.error("write", path)
            }
            done += n
        }
    }

    /// Reads up to `count` bytes at `offset`; fewer only at end of file.
    public func read(count: Int, at offset: UInt64) throws(MuxerError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = out.withUnsafeMutableBytes { buf in
                pread(fd, buf.baseAddress! + done, count - done, off_t(offset) + off_t(done))
            }
            if n < 0 {
                if errno == EINTR { continue }
                throw Self.error("read", path)
            }
            if n == 0 { break }
            done += n
        }
        if done < count { out.removeSubrange(done...) }
        return out
    }

    public func sync() throws(MuxerError) {
        guard fsync(fd) == 0 else { throw Self.error("fsync", path) }
    }

    /// Tells the kernel the given range will not be read again soon, so its clean (already
    /// synced) pages can leave the page cache now. A best-effort hint; failures are ignored.
    public func dropCachedPages(offset: UInt64, length: UInt64) {
        _ = posix_fadvise(fd, off_t(offset), off_t(length), POSIX_FADV_DONTNEED)
    }

    public func truncate(to length: UInt64) throws(MuxerError) {
        guard ftruncate(fd, off_t(length)) == 0 else { throw Self.error("truncate", path) }
    }

    public func size() throws(MuxerError) -> UInt64 {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw Self.error("stat", path) }
        return UInt64(st.st_size)
    }

    /// fsync of the directory makes a newly created or renamed file's name durable.
    public static func syncDirectory(of path: String) {
        let dir = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        let fd = open(dir.isEmpty ? "." : dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 {
            _ = fsync(fd)
            _ = Glibc.close(fd)
        }
    }

    public static func remove(_ path: String) { unlink(path) }

    public static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    public static func rename(_ from: String, to: String) throws(MuxerError) {
        guard Glibc.rename(from, to) == 0 else { throw error("rename", from) }
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file opened for positioned reads and writes, closed in `deinit`. Every failure carries
/// its errno so a full disk (ENOSPC) is reported as exactly that.
///
/// Paths under ``MemoryFiles/root`` are kept in memory instead (``MemoryFiles``): the fuzz
/// targets run the muxer, the reader and recovery on them without a system call.
public final class RandomAccessFile {
    public let path: String
    private var backing: Backing

    private enum Backing {
        case descriptor(Int32)
        case memory(MemoryFiles.File)
        case closed
    }

    public enum OpenMode { case createNew(mode: UInt32), readWrite, readOnly }

    public init(path: String, mode: OpenMode) throws(MuxerError) {
        self.path = path
        if MemoryFiles.contains(path) {
            backing = .memory(try MemoryFiles.open(path, create: { if case .createNew = mode { true } else { false } }()))
            return
        }
        let fd: Int32
        switch mode {
        case let .createNew(permissions):
            fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode_t(permissions))
        case .readWrite:
            fd = open(path, O_RDWR | O_CLOEXEC)
        case .readOnly:
            fd = open(path, O_RDONLY | O_CLOEXEC)
        }
        guard fd >= 0 else { throw Self.error("open", path) }
        backing = .descriptor(fd)
    }

    deinit { close() }

    public func close() {
        if case .descriptor(let fd) = backing { _ = Glibc.close(fd) }
        backing = .closed
    }

    static func error(_ operation: String, _ path: String) -> MuxerError {
        let code = errno
        return MuxerError(.io, "\(operation) \(path): \(String(cString: strerror(code)))", errno: code)
    }

    private func descriptor(_ operation: String) throws(MuxerError) -> Int32? {
        switch backing {
        case .descriptor(let fd): return fd
        case .memory: return nil
        case .closed: throw MuxerError(.io, "\(operation) \(path): the file is closed", errno: EBADF)
        }
    }

    public func write(_ bytes: [UInt8], at offset: UInt64) throws(MuxerError) {
        guard let fd = try descriptor("write") else {
            if case .memory(let file) = backing { file.write(bytes, at: offset) }
            return
        }
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

    /// Writes `parts` back to back from `offset`, as ``write(_:at:)`` would write them joined,
    /// without joining them: a fragment's samples go from the arrays they arrived in straight
    /// to the kernel (`pwritev`), where a joined copy cost a memmove of every byte and an
    /// allocation the size of the fragment. Parts go in groups of ``GatheredWrite/partsPerCall``.
    public func write(gathering parts: [[UInt8]], at offset: UInt64) throws(MuxerError) {
        guard let fd = try descriptor("write") else {
            if case .memory(let file) = backing {
                var at = offset
                for part in parts {
                    file.write(part, at: at)
                    at += UInt64(part.count)
                }
            }
            return
        }
        var at = offset
        var start = parts.startIndex
        while start < parts.endIndex {
            let group = parts[start ..< min(start + GatheredWrite.partsPerCall, parts.endIndex)]
            let failure = GatheredWrite.pinning(group) { vectors in GatheredWrite.writeAll(fd, vectors, at: at) }
            if failure != 0 {
                errno = failure
                throw Self.error("write", path)
            }
            at += UInt64(group.reduce(0) { $0 + $1.count })
            start = group.endIndex
        }
    }

    /// Reads up to `count` bytes at `offset`; fewer only at end of file.
    public func read(count: Int, at offset: UInt64) throws(MuxerError) -> [UInt8] {
        guard let fd = try descriptor("read") else {
            if case .memory(let file) = backing { return file.read(count: count, at: offset) }
            return []
        }
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
        guard let fd = try descriptor("fsync") else { return }
        guard fsync(fd) == 0 else { throw Self.error("fsync", path) }
    }

    /// Tells the kernel the given range will not be read again soon, so its clean (already
    /// synced) pages can leave the page cache now. A best-effort hint; failures are ignored.
    public func dropCachedPages(offset: UInt64, length: UInt64) {
        guard case .descriptor(let fd) = backing else { return }
        _ = posix_fadvise(fd, off_t(offset), off_t(length), POSIX_FADV_DONTNEED)
    }

    public func truncate(to length: UInt64) throws(MuxerError) {
        guard let fd = try descriptor("truncate") else {
            if case .memory(let file) = backing { file.truncate(to: length) }
            return
        }
        guard ftruncate(fd, off_t(length)) == 0 else { throw Self.error("truncate", path) }
    }

    public func size() throws(MuxerError) -> UInt64 {
        guard let fd = try descriptor("stat") else {
            if case .memory(let file) = backing { return file.size }
            return 0
        }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw Self.error("stat", path) }
        return UInt64(st.st_size)
    }

    /// fsync of the directory makes a newly created or renamed file's name durable.
    public static func syncDirectory(of path: String) {
        guard !MemoryFiles.contains(path) else { return }
        let dir = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        let fd = open(dir.isEmpty ? "." : dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 {
            _ = fsync(fd)
            _ = Glibc.close(fd)
        }
    }

    public static func remove(_ path: String) {
        if MemoryFiles.contains(path) { MemoryFiles.remove(path) } else { unlink(path) }
    }

    public static func exists(_ path: String) -> Bool {
        MemoryFiles.contains(path) ? MemoryFiles.exists(path) : access(path, F_OK) == 0
    }

    public static func rename(_ from: String, to: String) throws(MuxerError) {
        if MemoryFiles.contains(from) {
            try MemoryFiles.rename(from, to: to)
            return
        }
        guard Glibc.rename(from, to) == 0 else { throw error("rename", from) }
    }
}

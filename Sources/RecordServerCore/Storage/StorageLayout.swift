import Foundation
import Shared

/// Where record-server keeps its files, derived from one data directory:
///
/// ```
/// <data>/catalog.sqlite                                    the catalog (0600)
/// <data>/recordings/<agentID>/<yyyy-mm-dd UTC>/<sessionID>/ one directory per session (0700)
///        recording.mp4, or recording-0001.mp4, recording-0002.mp4, … when segmenting
/// ```
///
/// Paths are built only from identifiers that pass `Identifier(validating:)` (1…64 of
/// `[A-Za-z0-9._-]`, first character a letter or digit), so no component can be empty, `.`,
/// `..`, hidden, or contain a `/`. That alone keeps lexical paths inside the data directory.
///
/// Symbolic links are handled separately, because a lexically safe path can still lead
/// elsewhere if a component on disk is a link. The data directory itself may be (or sit
/// behind) a symbolic link — that is the operator's choice, e.g. a mount elsewhere — but
/// *inside* it nothing is followed:
/// 1. each component below the data directory is created with `mkdir` (0700) or, when it
///    already exists, checked with `lstat` to be a real directory (a link is refused);
/// 2. the finished directory is resolved with `realpath(3)` and must lie under the
///    resolved data directory.
///
/// The remaining race (a link swapped in between the check and the use) needs write access to
/// the data directory, which is 0700 and owned by the server's own user; we accept it.
struct StorageLayout: Sendable, Equatable {
    /// The name the muxer gives the session's files: `<base>.mp4` or `<base>-0001.mp4`, ….
    static let baseName = "recording"
    /// Subdirectory of the data directory that holds every recording.
    static let recordingsDirectoryName = "recordings"
    /// File name of the catalog database in the data directory.
    static let catalogFileName = "catalog.sqlite"

    /// The data directory: absolute and lexically normalised (no `.`/`..`/empty components,
    /// no trailing slash), as configured; symbolic links in it are not resolved.
    let dataDirectory: String

    /// `<data>/recordings`.
    var recordingsDirectory: String { dataDirectory + "/" + Self.recordingsDirectoryName }
    /// `<data>/catalog.sqlite`.
    var catalogPath: String { dataDirectory + "/" + Self.catalogFileName }

    /// - Throws: `.relativeDataDirectory` when `dataDirectory` does not start with `/`: a
    ///   relative path would depend on the working directory of whoever starts the server.
    init(dataDirectory: String) throws(StorageError) {
        guard dataDirectory.hasPrefix("/") else { throw .relativeDataDirectory(path: dataDirectory) }
        self.dataDirectory = Self.normalise(dataDirectory)
    }

    // MARK: Directories

    /// Creates the data directory (and missing parents) and `recordings/` with mode 0700.
    /// Existing directories keep their mode: the operator may have chosen a different one.
    func prepare() throws(StorageError) {
        var path = ""
        for component in dataDirectory.split(separator: "/") {
            path += "/" + component
            // Above and at the data directory links are followed (operator's choice), so `stat`.
            try Self.makeDirectory(path, followLinks: true)
        }
        try Self.makeDirectory(recordingsDirectory, followLinks: false, dataDirectory: dataDirectory)
    }

    /// The session's directory, computed without touching the disk.
    /// - Throws: `.invalidIdentifier` naming the field when an id is unusable.
    func sessionDirectory(agentID: String, sessionID: String, date: Date) throws(StorageError) -> String {
        let components = try sessionComponents(agentID: agentID, sessionID: sessionID, date: date)
        return recordingsDirectory + "/" + components.joined(separator: "/")
    }

    /// Creates (or reuses, for a resumed session) the session's directory and returns it with
    /// the base name for `MuxerConfiguration(directory:baseName:)`.
    ///
    /// Safe to call again for the same session and date: existing directories are checked,
    /// not recreated. `date` picks the UTC day folder, so pass the session's creation time.
    /// - Throws: `.invalidIdentifier` for a bad id; `.notADirectory` / `.outsideDataDirectory`
    ///   when a component on disk is a file or a symbolic link; `.systemCall` on I/O errors.
    func createSessionDirectory(agentID: String, sessionID: String, date: Date) throws(StorageError)
        -> (directory: String, baseName: String) {
        let components = try sessionComponents(agentID: agentID, sessionID: sessionID, date: date)
        try prepare()
        var path = recordingsDirectory
        for component in components {
            path += "/" + component
            try Self.makeDirectory(path, followLinks: false, dataDirectory: dataDirectory)
        }
        _ = try resolvedInsideDataDirectory(path)
        return (path, Self.baseName)
    }

    /// The same as `createSessionDirectory`, shaped for `SessionLocator`:
    /// `locate: { try layout.locate(agentID: $0, sessionID: $1, date: $2) }`.
    func locate(agentID: String, sessionID: SessionID, date: Date) throws(StorageError) -> (directory: String, baseName: String) {
        try createSessionDirectory(agentID: agentID, sessionID: sessionID.value, date: date)
    }

    /// Resolves `path` (symbolic links included) and checks that it lies below the data
    /// directory. A path that no longer exists is judged by its nearest existing ancestor, so
    /// a deleted file can still be checked.
    /// - Returns: the resolved path.
    /// - Throws: `.outsideDataDirectory` when it does not.
    @discardableResult
    func resolvedInsideDataDirectory(_ path: String) throws(StorageError) -> String {
        let root = Self.realPath(dataDirectory) ?? dataDirectory
        let absolute = path.hasPrefix("/") ? Self.normalise(path) : Self.normalise(dataDirectory + "/" + path)
        // Find the deepest existing ancestor, resolve it, and re-append the missing tail.
        var existing = absolute
        var tail: [Substring] = []
        var resolved = Self.realPath(existing)
        while resolved == nil, existing != "/" {
            let cut = existing.lastIndex(of: "/") ?? existing.startIndex
            tail.insert(existing[existing.index(after: cut)...], at: 0)
            existing = cut == existing.startIndex ? "/" : String(existing[..<cut])
            resolved = Self.realPath(existing)
        }
        let full = ([resolved ?? existing] + tail.map(String.init)).joined(separator: "/")
        let normalised = Self.normalise(full)
        guard normalised.hasPrefix(root == "/" ? "/" : root + "/") else {
            throw .outsideDataDirectory(path: path, resolved: normalised)
        }
        return normalised
    }

    /// After retention deleted a session's last file: removes the session's leftovers (the
    /// `session.mcrp` sidecar) and then each now-empty directory up to `recordings/`. Anything
    /// unexpected in a directory keeps it (and its parents) in place; nothing is removed
    /// recursively, so a wrong path can never take more than empty directories with it.
    func removeSessionDirectoryIfEmpty(_ directory: String, leftovers: [String]) throws(StorageError) {
        let resolved = try resolvedInsideDataDirectory(directory)
        let recordingsRoot = Self.realPath(recordingsDirectory) ?? recordingsDirectory
        guard resolved.hasPrefix(recordingsRoot + "/") else { throw .outsideDataDirectory(path: directory, resolved: resolved) }
        for name in leftovers where !name.contains("/") {
            let file = resolved + "/" + name
            if unlink(file) != 0, errno != ENOENT { throw .systemCall(operation: "unlink", path: file, errno: errno) }
        }
        var current = resolved
        while current.hasPrefix(recordingsRoot + "/") {
            if rmdir(current) != 0 {
                let code = errno
                // Not empty: something else still lives there, so it and its parents stay.
                if code == ENOTEMPTY || code == EEXIST { return }
                if code != ENOENT { throw .systemCall(operation: "rmdir", path: current, errno: code) }
            }
            guard let cut = current.lastIndex(of: "/") else { return }
            current = String(current[..<cut])
        }
    }

    // MARK: Health

    /// Bytes available to the server's user on the data directory's file system.
    func freeBytes() throws(StorageError) -> Int64 {
        var info = statvfs()
        guard statvfs(dataDirectory, &info) == 0 else { throw .systemCall(operation: "statvfs", path: dataDirectory, errno: errno) }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }

    /// Proves the data directory accepts new files right now (not read-only, not full, right
    /// owner) by creating, writing, syncing and deleting a small probe file. The probe's name
    /// starts with a dot, which no identifier can, so it never collides with a recording.
    func checkWritable() throws(StorageError) {
        let probe = dataDirectory + "/.write-check-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        let fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .systemCall(operation: "create", path: probe, errno: errno) }
        defer { unlink(probe) }
        var byte: UInt8 = 0x2A
        let written = write(fd, &byte, 1)
        let writeErrno = errno
        let synced = fsync(fd)
        let syncErrno = errno
        close(fd)
        guard written == 1 else { throw .systemCall(operation: "write", path: probe, errno: writeErrno) }
        guard synced == 0 else { throw .systemCall(operation: "fsync", path: probe, errno: syncErrno) }
    }

    // MARK: Internals

    private func sessionComponents(agentID: String, sessionID: String, date: Date) throws(StorageError) -> [String] {
        do { _ = try Identifier(validating: agentID) } catch { throw .invalidIdentifier(field: "agentID", value: agentID) }
        do { _ = try Identifier(validating: sessionID) } catch { throw .invalidIdentifier(field: "sessionID", value: sessionID) }
        return [agentID, Self.utcDay(date), sessionID]
    }

    /// `yyyy-mm-dd` of `date` in UTC: the same day name on every server whatever its time zone.
    static func utcDay(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let year = Int(parts.tm_year) + 1900, month = Int(parts.tm_mon) + 1, day = Int(parts.tm_mday)
        func pad(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))"
    }

    /// Creates `path` with mode 0700 or checks that the existing entry is a directory.
    /// With `followLinks == false` an existing symbolic link is refused: pointing outside the
    /// data directory gives `.outsideDataDirectory`, anywhere else `.notADirectory`.
    private static func makeDirectory(_ path: String, followLinks: Bool, dataDirectory: String = "/") throws(StorageError) {
        // Look before creating: an existing ancestor may sit on a read-only mount or in a
        // directory we may not write, where mkdir could fail with EROFS/EACCES instead of EEXIST.
        var info = stat()
        var result = followLinks ? stat(path, &info) : lstat(path, &info)
        if result != 0 {
            guard errno == ENOENT else { throw .systemCall(operation: followLinks ? "stat" : "lstat", path: path, errno: errno) }
            if mkdir(path, 0o700) == 0 {
                // mkdir's mode passes through the umask; make the result exact.
                guard chmod(path, 0o700) == 0 else { throw .systemCall(operation: "chmod", path: path, errno: errno) }
                return
            }
            // Lost a race with another creator: judge what is there now.
            guard errno == EEXIST else { throw .systemCall(operation: "mkdir", path: path, errno: errno) }
            result = followLinks ? stat(path, &info) : lstat(path, &info)
            guard result == 0 else { throw .systemCall(operation: followLinks ? "stat" : "lstat", path: path, errno: errno) }
        }
        switch info.st_mode & S_IFMT {
        case S_IFDIR:
            return
        case S_IFLNK:
            let root = realPath(dataDirectory) ?? dataDirectory
            let target = realPath(path) ?? path
            if !target.hasPrefix(root == "/" ? "/" : root + "/") { throw .outsideDataDirectory(path: path, resolved: target) }
            throw .notADirectory(path: path)
        default:
            throw .notADirectory(path: path)
        }
    }

    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Lexical normalisation of an absolute path: drops empty and `.` components and applies
    /// `..` to the text (no file-system access), as the shell does for `cd -L`.
    static func normalise(_ path: String) -> String {
        var parts: [Substring] = []
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            switch component {
            case ".": continue
            case "..": if !parts.isEmpty { parts.removeLast() }
            default: parts.append(component)
            }
        }
        return "/" + parts.joined(separator: "/")
    }
}

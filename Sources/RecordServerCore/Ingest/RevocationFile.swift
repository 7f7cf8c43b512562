import Foundation
import Logging
import NIOConcurrencyHelpers
import RecordingTLS

/// The server's `tls.revocationList`, re-read whenever the file changes, so that
/// `recordctl ca revoke` plus copying the file takes effect at the next connection, with no
/// restart.
///
/// Each authentication calls ``serials()``, which costs one `stat` of the file. When its
/// modification time, size or inode differ from the last read, the file is read again. If
/// the new content cannot be read (a half-copied or malformed file), the previous list stays
/// in force and the error is logged once for that version of the file. A revocation list
/// must never fail open.
final class RevocationFile: Sendable {
    private struct Version: Equatable {
        var modified: timespec
        var size: Int64
        var inode: UInt64
        static func == (a: Version, b: Version) -> Bool {
            a.modified.tv_sec == b.modified.tv_sec && a.modified.tv_nsec == b.modified.tv_nsec && a.size == b.size && a.inode == b.inode
        }
    }

    private struct State {
        var serials: Set<String>
        var version: Version?
    }

    let path: String
    private let logger: Logger
    private let state: NIOLockedValueBox<State>

    /// Reads the file now. A missing file is an empty list, as at startup; a malformed one
    /// is an error here, so that the server refuses to start with it.
    init(path: String, logger: Logger) throws(RevocationListError) {
        self.path = path
        self.logger = logger
        let version = Self.version(of: path)
        let list = try RevocationList.load(path: path)
        state = NIOLockedValueBox(State(serials: Self.serials(of: list), version: version))
    }

    /// The revoked serial numbers (normalised lowercase hex), re-read if the file changed.
    func serials() -> Set<String> {
        let current = Self.version(of: path)
        return state.withLockedValue { state in
            guard current != state.version else { return state.serials }
            state.version = current
            do {
                let list = try RevocationList.load(path: path)
                let serials = Self.serials(of: list)
                if serials != state.serials {
                    logger.notice("revocation list reloaded", metadata: ["path": "\(path)", "revoked": "\(serials.count)"])
                }
                state.serials = serials
            } catch {
                logger.error("revocation list changed but cannot be read; the previous list stays in force",
                             metadata: ["path": "\(path)", "error": "\(error)", "revoked": "\(state.serials.count)"])
            }
            return state.serials
        }
    }

    private static func serials(of list: RevocationList) -> Set<String> {
        Set(list.entries.map { $0.serial.lowercased() })
    }

    private static func version(of path: String) -> Version? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Version(modified: info.st_mtim, size: Int64(info.st_size), inode: UInt64(info.st_ino))
    }
}

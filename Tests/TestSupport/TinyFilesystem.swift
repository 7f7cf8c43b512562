import Foundation

/// A size-limited tmpfs mounted for one test: a data directory whose disk really fills up.
/// Mounting needs permission (root, CI); ``canMount`` says whether this run has it.
public struct TinyFilesystem: Sendable {
    public let path: String

    public static let canMount: Bool = {
        let probe = FileManager.default.temporaryDirectory.appendingPathComponent("mount-probe-\(getpid())").path
        // A probe: any failure here means "cannot mount", and the suite says so instead of running.
        try? FileManager.default.createDirectory(atPath: probe, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: probe) }
        guard (try? runTool("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", probe]))?.status == 0 else { return false }
        _ = try? runTool("umount", [probe])
        return true
    }()

    public init(path: String, kilobytes: Int) throws {
        self.path = path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let r = try runTool("mount", ["-t", "tmpfs", "-o", "size=\(kilobytes)k,mode=0700", "tmpfs", path])
        guard r.status == 0 else { throw ToolError.unexpected("mount failed: \(r.stderr)") }
    }

    public func grow(kilobytes: Int) throws {
        let r = try runTool("mount", ["-o", "remount,size=\(kilobytes)k", path])
        guard r.status == 0 else { throw ToolError.unexpected("remount failed: \(r.stderr)") }
    }

    /// Writes `ballast` until the filesystem it is on is full; returns how many bytes it took.
    public static func fill(_ ballast: String) -> Int {
        let fd = open(ballast, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        defer { close(fd) }
        let chunk = [UInt8](repeating: 0, count: 1 << 16)
        var total = 0
        while true {
            let n = chunk.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            total += n
        }
        return total
    }

    /// Cleanup only (a lazy unmount): a tmpfs left mounted holds nothing a later test reads.
    public func unmount() { _ = try? runTool("umount", ["-l", path]) }
}

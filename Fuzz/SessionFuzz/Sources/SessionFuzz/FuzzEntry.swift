import Glibc
import MP4
import SessionScript

// The fuzzed function (docs/protocol.md §11): the bytes become a SessionScript, which runs
// against the session validator (when the script says so) and the MP4 muxer, recovery and
// reader. A trap anywhere, a hang (libFuzzer's -timeout) or a large allocation
// (-rss_limit_mb, -malloc_limit_mb) is a finding; so is any violated expectation the drive reports.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    let script = SessionScript(Array(UnsafeBufferPointer(start: data, count: size)))
    let outcome: SessionDrive.Outcome
    if script.throughValidator {
        var gate = ValidatorGate(script: script)
        outcome = SessionDrive.run(script, directory: FuzzDirectory.path, baseName: "r", gate: &gate)
    } else {
        var gate = OpenGate()
        outcome = SessionDrive.run(script, directory: FuzzDirectory.path, baseName: "r", gate: &gate)
    }
    precondition(outcome.violations.isEmpty, outcome.violations.joined(separator: "; "))
    FuzzDirectory.empty()
    return 0
}

/// Where a run's recording goes: memory files (MP4's `MemoryFiles`), so that an input costs
/// no system call; `SESSION_FUZZ_DISK=1` writes to a scratch directory in tmpfs instead, as
/// the first runs did (docs/protocol.md §11.1 has both figures).
enum FuzzDirectory {
    nonisolated(unsafe) static let onDisk = getenv("SESSION_FUZZ_DISK") != nil

    nonisolated(unsafe) static let path: String = {
        guard onDisk else { return MemoryFiles.root + "session" }
        let base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp"
        let dir = "\(base)/session-fuzz-\(getpid())"
        mkdir(dir, 0o700)
        atexit { rmdir(FuzzDirectory.path) }
        return dir
    }()

    /// Removes whatever a run left behind, so the next run starts from an empty directory.
    static func empty() {
        guard onDisk else {
            MemoryFiles.removeAll()
            return
        }
        guard let dir = opendir(path) else { return }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != ".", name != ".." { unlink(path + "/" + name) }
        }
    }
}

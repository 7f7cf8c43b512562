#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Small OS helpers for the benchmark: clocks, resource usage, process spawning, /proc reads.
// No Foundation, so the measured process carries nothing it does not need.

/// The running benchmark's name (basename of argv[0]), prefixed to progress lines.
public let programName: String = String(CommandLine.arguments.first?.split(separator: "/").last ?? "bench")

/// Progress and diagnostics go to stderr; stdout carries only the result tables.
public func progress(_ message: String) {
    let line = programName + ": " + message + "\n"
    var copy = line
    copy.withUTF8 { buf in _ = write(2, buf.baseAddress, buf.count) }
}

public struct BenchError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// CLOCK_MONOTONIC in nanoseconds.
public func monotonicNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

public func elapsed(from start: UInt64, to end: UInt64) -> Double { Double(end &- start) / 1e9 }

/// User and system CPU seconds.
public struct CPUTime {
    public var user: Double
    public var system: Double
    public var total: Double { user + system }

    public init(user: Double, system: Double) {
        self.user = user
        self.system = system
    }

    public init(_ ru: rusage) {
        user = Double(ru.ru_utime.tv_sec) + Double(ru.ru_utime.tv_usec) / 1e6
        system = Double(ru.ru_stime.tv_sec) + Double(ru.ru_stime.tv_usec) / 1e6
    }

    public static func self_() -> CPUTime {
        var ru = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &ru)
        return CPUTime(ru)
    }

    public static func - (a: CPUTime, b: CPUTime) -> CPUTime { CPUTime(user: a.user - b.user, system: a.system - b.system) }
}

public func readTextFile(_ path: String) -> String? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var out: [UInt8] = []
    var buf = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n < 0, errno == EINTR { continue }
        if n <= 0 { break }
        out += buf[0..<n]
    }
    return String(decoding: out, as: UTF8.self)
}

/// A "Key:   value kB" field of /proc/self/status, in KiB.
public func procStatusKiB(_ key: String) -> Int? {
    guard let text = readTextFile("/proc/self/status") else { return nil }
    for line in text.split(separator: "\n") where line.hasPrefix(key + ":") {
        let digits = line.dropFirst(key.count + 1).filter(\.isNumber)
        return Int(digits)
    }
    return nil
}

/// Resets VmHWM (peak RSS) to the current RSS (Linux ≥ 4.0), so the peak of one phase can be measured.
@discardableResult
public func resetPeakRSS() -> Bool {
    let fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    return write(fd, "5", 1) == 1
}

/// Runs a shell command and returns its stdout (for version strings and ffprobe).
public func capture(_ command: String) -> String? {
    guard let pipe = popen(command, "r") else { return nil }
    var out: [UInt8] = []
    var buf = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = buf.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, pipe) }
        if n <= 0 { break }
        out += buf[0..<n]
    }
    let status = pclose(pipe)
    guard status == 0 else { return nil }
    return String(decoding: out, as: UTF8.self)
}

public func shellQuote(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'" }

extension String {
    public func replacingOccurrences(of target: String, with replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var result = ""
        var rest = self[...]
        while let r = rest.firstRange(of: target) {
            result += rest[rest.startIndex..<r.lowerBound]
            result += replacement
            rest = rest[r.upperBound...]
        }
        result += rest
        return result
    }
}

/// One child process: wall time from spawn to reap, and its own rusage (via wait4).
public struct ChildRun {
    public var wall: Double
    public var cpu: CPUTime
    public var maxRSSKiB: Int
    public var exitStatus: Int32
}

/// A started child process (see ``spawnChild(_:quiet:stderrPath:)``).
public struct Child {
    public var pid: pid_t
    public var started: UInt64
}

/// posix_spawnp without waiting. stdin is /dev/null; stdout goes to /dev/null when `quiet`;
/// stderr goes to `stderrPath` when given (else it is inherited).
public func spawnChild(_ argv: [String], quiet: Bool = false, stderrPath: String? = nil) throws -> Child {
    var cargs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) }
    cargs.append(nil)
    defer { for p in cargs { free(p) } }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    if quiet { posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0) }
    if let stderrPath { posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644) }
    var pid: pid_t = 0
    let t0 = monotonicNanos()
    let rc = posix_spawnp(&pid, argv[0], &actions, nil, cargs, environ)
    guard rc == 0 else { throw BenchError("cannot start \(argv[0]): \(String(cString: strerror(rc)))") }
    return Child(pid: pid, started: t0)
}

/// Waits for `child` (wait4) and returns its wall time, own rusage and exit status.
public func waitChild(_ child: Child) throws -> ChildRun {
    var status: Int32 = 0
    var ru = rusage()
    while wait4(child.pid, &status, 0, &ru) < 0 {
        guard errno == EINTR else { throw BenchError("wait4 failed: \(String(cString: strerror(errno)))") }
    }
    let t1 = monotonicNanos()
    let exited = status & 0x7F == 0
    let code = exited ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    return ChildRun(wall: elapsed(from: child.started, to: t1), cpu: CPUTime(ru), maxRSSKiB: Int(ru.ru_maxrss), exitStatus: code)
}

/// posix_spawnp + wait4. The child inherits stderr (and stdout unless `quiet`); stdin is /dev/null.
public func spawnAndWait(_ argv: [String], quiet: Bool = false) throws -> ChildRun {
    try waitChild(try spawnChild(argv, quiet: quiet))
}

/// CPU seconds (user + system) a live process has used so far, from /proc/PID/stat.
public func processCPUSeconds(_ pid: pid_t) -> Double? { processCPUTime(pid)?.total }

/// User and system CPU seconds a live process has used so far, from /proc/PID/stat.
public func processCPUTime(_ pid: pid_t) -> CPUTime? {
    guard let text = readTextFile("/proc/\(pid)/stat"), let close = text.lastIndex(of: ")") else { return nil }
    // Fields after "(comm)": state is field 3; utime and stime are fields 14 and 15.
    let fields = text[text.index(after: close)...].split(separator: " ")
    guard fields.count > 13, let utime = Double(fields[11]), let stime = Double(fields[12]) else { return nil }
    let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
    return CPUTime(user: utime / ticks, system: stime / ticks)
}

/// A "Key:   value kB" field of /proc/PID/status, in KiB.
public func processStatusKiB(_ pid: pid_t, _ key: String) -> Int? {
    guard let text = readTextFile("/proc/\(pid)/status") else { return nil }
    for line in text.split(separator: "\n") where line.hasPrefix(key + ":") {
        return Int(line.dropFirst(key.count + 1).filter(\.isNumber))
    }
    return nil
}

public func removeTree(_ path: String) {
    _ = capture("rm -rf " + shellQuote(path))
}

public func makeDirectory(_ path: String) throws {
    if mkdir(path, 0o755) != 0, errno != EEXIST {
        throw BenchError("mkdir \(path): \(String(cString: strerror(errno)))")
    }
}

public func fileSize(_ path: String) -> UInt64? {
    var st = stat()
    guard stat(path, &st) == 0 else { return nil }
    return UInt64(st.st_size)
}

public func median(_ values: [Double]) -> Double {
    precondition(!values.isEmpty)
    let s = values.sorted()
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}

public func loadAverage() -> String {
    guard let text = readTextFile("/proc/loadavg") else { return "?" }
    return text.split(separator: " ").prefix(3).joined(separator: " ")
}

/// Fixed-point formatting without Foundation.
public func format(_ x: Double, _ decimals: Int) -> String {
    guard x.isFinite else { return "n/a" }
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let scaled = (abs(x) * scale).rounded()
    let intPart = Int(scaled / scale)
    var frac = String(Int(scaled - Double(intPart) * scale))
    while frac.count < decimals { frac = "0" + frac }
    let sign = x < 0 && scaled != 0 ? "-" : ""
    return decimals == 0 ? sign + String(intPart) : sign + String(intPart) + "." + frac
}

/// Groups thousands: 1234567 -> "1,234,567".
public func grouped(_ n: Int) -> String {
    let digits = Array(String(abs(n)))
    var out = ""
    for (i, c) in digits.enumerated() {
        if i > 0, (digits.count - i) % 3 == 0 { out += "," }
        out.append(c)
    }
    return (n < 0 ? "-" : "") + out
}

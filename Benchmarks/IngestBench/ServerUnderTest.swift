#if canImport(Glibc)
import Glibc
#endif
import BenchSupport

/// Certificates for the run: one CA, the server's certificate (also used by the ffmpeg
/// listeners) and one client certificate per simulated agent, all written under `directory`.
struct BenchPKI {
    let directory: String
    var caPath: String { directory + "/ca.pem" }
    var serverCertPath: String { directory + "/server.pem" }
    var serverKeyPath: String { directory + "/server-key.pem" }
    func agentCertPath(_ id: String) -> String { directory + "/\(id).pem" }
    func agentKeyPath(_ id: String) -> String { directory + "/\(id)-key.pem" }
}

/// A record-server process started from its binary with a generated configuration file,
/// and what /proc says about it while it runs.
final class ServerUnderTest {
    let child: Child
    let port: Int
    let dataDirectory: String
    let logPath: String

    init(binary: String, pki: BenchPKI, directory: String, maxSessions: Int, fsync: String, resumeWindowSeconds: Int? = nil) throws {
        try makeDirectory(directory)
        dataDirectory = directory + "/data"
        logPath = directory + "/server.log"
        port = try freeLoopbackPort(from: 19_000)
        // Every setting at its production default except the addresses, paths, session cap and
        // (when asked) the fsync policy and the resume window (catch-up mode outlasts the default 60 s).
        let config = """
        {
          "ingest": { "host": "127.0.0.1", "port": \(port) },
          "admin": { "enabled": false },
          "dataDirectory": "\(dataDirectory)",
          "tls": { "caCertificate": "\(pki.caPath)", "certificate": "\(pki.serverCertPath)",
                   "privateKey": "\(pki.serverKeyPath)", "requireClientCertificate": true },
          "maxSessions": \(maxSessions),
          "fsync": "\(fsync)",\(resumeWindowSeconds.map { "\n  \"resumeWindowSeconds\": \($0)," } ?? "")
          "logLevel": "warning"
        }
        """
        let configPath = directory + "/server.json"
        try writeTextFile(configPath, config)
        child = try spawnChild([binary, "--config", configPath], quiet: true, stderrPath: logPath)
        try waitForListener(port: port, timeoutSeconds: 20, pid: child.pid, what: "record-server (log: \(logPath))")
    }

    var cpuSeconds: Double { cpuTime.total }
    var cpuTime: CPUTime { processCPUTime(child.pid) ?? CPUTime(user: .nan, system: .nan) }
    var rssKiB: Int { processStatusKiB(child.pid, "VmRSS") ?? 0 }

    /// SIGTERM (graceful: sessions still open are finalized) and wait.
    func stop() throws -> ChildRun {
        kill(child.pid, SIGTERM)
        return try waitChild(child)
    }
}

/// 127.0.0.1:`port` as a socket address.
func loopbackAddress(port: Int) -> sockaddr_in {
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    addr.sin_port = UInt16(port).bigEndian
    return addr
}

/// Calls `operation` (bind, connect) on a new TCP socket with 127.0.0.1:`port`, closes the
/// socket, and returns the call's result (0 on success).
func withLoopbackSocket(port: Int, _ operation: (Int32, UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return -1 }
    defer { close(fd) }
    var addr = loopbackAddress(port: port)
    return withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { operation(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
}

/// The lowest port from `start` that can be bound on 127.0.0.1 right now. Ports below the
/// kernel's ephemeral range (32768…) cannot be taken meanwhile by an outgoing connection.
func freeLoopbackPort(from start: Int) throws -> Int {
    for port in start..<32768 where withLoopbackSocket(port: port, { bind($0, $1, $2) }) == 0 {
        return port
    }
    throw BenchError("no free port between \(start) and 32767")
}

/// Polls until something accepts TCP connections on 127.0.0.1:`port` (the probe connection
/// is closed at once; record-server treats it as a client that left before its handshake).
func waitForListener(port: Int, timeoutSeconds: Double, pid: pid_t, what: String) throws {
    let deadline = monotonicNanos() + UInt64(timeoutSeconds * 1e9)
    while monotonicNanos() < deadline {
        let rc = withLoopbackSocket(port: port) { connect($0, $1, $2) }
        if rc == 0 { return }
        var status: Int32 = 0
        if waitpid(pid, &status, WNOHANG) == pid { throw BenchError("\(what) exited during startup") }
        usleep(50_000)
    }
    throw BenchError("\(what) did not listen on port \(port) within \(Int(timeoutSeconds)) s")
}

func writeTextFile(_ path: String, _ text: String) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard fd >= 0 else { throw BenchError("cannot write \(path): \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    var copy = text
    let ok = copy.withUTF8 { write(fd, $0.baseAddress, $0.count) == $0.count }
    guard ok else { throw BenchError("short write to \(path)") }
}

/// Bytes free for an unprivileged writer on the file system holding `path` (statvfs).
func freeBytes(at path: String) -> UInt64? {
    var st = statvfs()
    guard statvfs(path, &st) == 0 else { return nil }
    return UInt64(st.f_bavail) * UInt64(st.f_frsize)
}

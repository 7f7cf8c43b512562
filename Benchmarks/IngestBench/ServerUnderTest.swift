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

    init(binary: String, pki: BenchPKI, directory: String, maxSessions: Int) throws {
        try makeDirectory(directory)
        dataDirectory = directory + "/data"
        logPath = directory + "/server.log"
        port = try freeLoopbackPort()
        // Every setting at its production default except the addresses, paths and session cap.
        let config = """
        {
          "ingest": { "host": "127.0.0.1", "port": \(port) },
          "admin": { "enabled": false },
          "dataDirectory": "\(dataDirectory)",
          "tls": { "caCertificate": "\(pki.caPath)", "certificate": "\(pki.serverCertPath)",
                   "privateKey": "\(pki.serverKeyPath)", "requireClientCertificate": true },
          "maxSessions": \(maxSessions),
          "logLevel": "warning"
        }
        """
        let configPath = directory + "/server.json"
        try writeTextFile(configPath, config)
        child = try spawnChild([binary, "--config", configPath], quiet: true, stderrPath: logPath)
        try waitForListener(port: port, timeoutSeconds: 20, pid: child.pid, what: "record-server (log: \(logPath))")
    }

    var cpuSeconds: Double { processCPUSeconds(child.pid) ?? .nan }
    var rssKiB: Int { processStatusKiB(child.pid, "VmRSS") ?? 0 }

    /// SIGTERM (graceful: sessions still open are finalized) and wait.
    func stop() throws -> ChildRun {
        kill(child.pid, SIGTERM)
        return try waitChild(child)
    }
}

/// A loopback port that was free a moment ago.
func freeLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw BenchError("socket: \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
    guard bound == 0 else { throw BenchError("bind: \(String(cString: strerror(errno)))") }
    _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
    return Int(UInt16(bigEndian: addr.sin_port))
}

/// Polls until something accepts TCP connections on 127.0.0.1:`port` (the probe connection
/// is closed at once; record-server treats it as a client that left before its handshake).
func waitForListener(port: Int, timeoutSeconds: Double, pid: pid_t, what: String) throws {
    let deadline = monotonicNanos() + UInt64(timeoutSeconds * 1e9)
    while monotonicNanos() < deadline {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = UInt16(port).bigEndian
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        close(fd)
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

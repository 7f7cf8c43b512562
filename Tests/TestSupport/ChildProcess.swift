import Foundation

/// A real executable of ours (record-server, capture-agent) running beside the test, for what
/// only a process shows: SIGKILL, SIGTERM, exit codes, restarts on the same data directory.
/// Its stdout and stderr are appended to `logPath` (discarded when nil).
public final class ChildProcess: @unchecked Sendable {
    public let logPath: String?
    private let process = Process()

    /// Starts `executable` with `arguments`; `environment` is added to the test's own.
    public init(_ executable: String, _ arguments: [String], environment: [String: String] = [:], logPath: String? = nil) throws {
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw ToolError.notFound("\(executable) (build it first: swift build --build-tests)")
        }
        self.logPath = logPath
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        process.standardInput = FileHandle.nullDevice
        if let logPath {
            if !FileManager.default.fileExists(atPath: logPath) { FileManager.default.createFile(atPath: logPath, contents: nil) }
            let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
            log.seekToEndOfFile()
            process.standardOutput = log
            process.standardError = log
        } else {
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
        }
        try process.run()
    }

    public var isRunning: Bool { process.isRunning }
    public var pid: Int32 { process.processIdentifier }
    /// Valid once the process has exited.
    public var terminationStatus: Int32 { process.terminationStatus }
    public var terminationReason: Process.TerminationReason { process.terminationReason }

    /// What it logged so far ("" without a log, or before the file exists: nothing logged yet).
    public var log: String { logPath.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) } ?? "" }

    /// Sends `signal` and waits for the process to end.
    public func signalAndWait(_ signal: Int32) {
        guard process.isRunning else { return }
        kill(process.processIdentifier, signal)
        process.waitUntilExit()
    }

    /// A crash: SIGKILL, then wait.
    public func kill9() { signalAndWait(SIGKILL) }

    /// A graceful stop: SIGTERM, then wait.
    public func terminate() { signalAndWait(SIGTERM) }

    /// SIGTERM, then SIGKILL if it has not exited within `grace`.
    public func stop(grace: Duration = .seconds(30)) async {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        let deadline = ContinuousClock.now + grace
        // A cancelled sleep only ends the wait early; SIGKILL follows either way.
        while process.isRunning && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(100)) }
        signalAndWait(SIGKILL)
    }

    /// Waits (bounded) for the process to exit by itself; returns its exit status.
    public func waitForExit(within limit: Duration = .seconds(30)) async throws -> Int32 {
        let deadline = ContinuousClock.now + limit
        while process.isRunning {
            guard ContinuousClock.now < deadline else { throw ToolError.unexpected("\(process.executableURL?.path ?? "process") did not exit: \(log)") }
            try await Task.sleep(for: .milliseconds(100))
        }
        return process.terminationStatus
    }
}

/// Loopback TCP ports for servers started as processes.
public enum LoopbackPort {
    /// A free port (bound and released; the server binds it again at once).
    public static func free() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw ToolError.unexpected("no free loopback port: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether something accepts TCP connections on `host`:`port` (an IPv4 address).
    public static func accepts(_ port: Int, host: String = "127.0.0.1") -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        return connect(fd, port: port, host: host)
    }

    /// connect(2) of the TCP socket `fd` to `host`:`port` (an IPv4 address).
    public static func connect(_ fd: Int32, port: Int, host: String = "127.0.0.1") -> Bool {
        var address = loopback(port: port)
        address.sin_addr.s_addr = inet_addr(host)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}

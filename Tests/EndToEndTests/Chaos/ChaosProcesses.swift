import Foundation
import TestSupport

/// A real `capture-agent` in command mode (it records when the server says so), with a test
/// camera whose pictures carry their frame number and a test tone, logging at trace level so
/// that its log says what the server acknowledged.
final class AgentProcess: @unchecked Sendable {
    let id: String
    let logPath: String
    private let process: ChildProcess

    init(id: String, serverPort: Int, fixture: ServerFixture, logLevel: String = "trace",
         sources: [String] = ["front=test:320x240@10", "tone=test:audio"], extraArguments: [String] = []) throws {
        guard let binary = captureAgentBinary else {
            throw ChaosFailure("capture-agent is not built: swift build --build-tests")
        }
        self.id = id
        let files = try fixture.writeAgentCertificate(id)
        logPath = fixture.directory + "/\(id).log"
        process = try ChildProcess(binary, [
            "run", "--server", "127.0.0.1:\(serverPort)", "--ca", fixture.caPath, "--cert", files.certificate, "--key", files.privateKey,
            "--agent-id", id,
        ] + sources.flatMap { ["--source", $0] } + [
            "--preset", "ultrafast", "--threads", "1", "--reconnect-initial-ms", "100", "--reconnect-max-ms", "500",
            "--log-level", logLevel,
        ] + extraArguments, logPath: logPath)
    }

    var isRunning: Bool { process.isRunning }

    /// The log so far.
    var log: String { process.log }

    /// SIGKILL: the agent dies with whatever it had not sent.
    func kill9() { process.kill9() }

    /// SIGTERM, then SIGKILL if it has not exited within 30 s.
    func stop() async { await process.stop() }

    /// Per session: the highest sequence number the server acknowledged, from the log.
    func acknowledged() -> [String: UInt64] {
        var result: [String: UInt64] = [:]
        for line in log.split(whereSeparator: \.isNewline) {
            guard let at = line.range(of: "session "), let mark = line.range(of: " acknowledged through sequence ") else { continue }
            let session = String(line[at.upperBound ..< mark.lowerBound])
            guard let n = UInt64(line[mark.upperBound...].prefix { $0.isNumber }) else { continue }
            result[session] = max(result[session] ?? 0, n)
        }
        return result
    }
}

/// `recordctl` as an operator runs it.
struct OperatorConsole {
    let adminURL: String
    let tokenFile: String

    /// A command that talks to the server (`--server` and `--token-file` added).
    func run(_ arguments: [String]) throws -> ToolOutput {
        try runTool(try Self.binary(), arguments + ["--server", adminURL, "--token-file", tokenFile, "--timeout", "20"])
    }

    /// A command that works on files only (`recover`, `verify`).
    func local(_ arguments: [String]) throws -> ToolOutput { try runTool(try Self.binary(), arguments) }

    static func binary() throws -> String {
        guard let path = recordctlBinary else { throw ChaosFailure("recordctl is not built: swift build --build-tests") }
        return path
    }

    /// The live sessions (`recordctl sessions --json`), or nil while the server does not answer.
    func liveSessions() -> [[String: Any]]? { list(["sessions", "--json"], key: "sessions") }

    /// Ids of the connected agents, or nil while the server does not answer.
    func connectedAgents() -> Set<String>? {
        list(["agents", "--json"], key: "agents").map { Set($0.compactMap { $0["id"] as? String }) }
    }

    /// Every recording in the catalog (`recordctl recordings --json`).
    func recordings() -> [[String: Any]]? { list(["recordings", "--json", "--limit", "1000"], key: "recordings") }

    /// The list under `key` in the JSON a command printed, or nil while the server does not answer.
    private func list(_ arguments: [String], key: String) -> [[String: Any]]? {
        // A server restarting answers nothing (nil), and the caller polls again.
        guard let out = try? run(arguments), out.status == 0,
              let json = try? JSONSerialization.jsonObject(with: out.stdout) as? [String: Any] else { return nil }
        return json[key] as? [[String: Any]] ?? []
    }
}

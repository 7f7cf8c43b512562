import Foundation
import Testing

/// The recordctl executable built next to the tests (`swift build --build-tests` builds it).
public let recordctlBinary = BuiltProducts.path("recordctl")

/// What a finished command printed, as text, with the arguments it ran with.
public struct CommandResult: Sendable {
    public var arguments: [String] = []
    public var status: Int32
    public var stdout: String
    public var stderr: String
    public var output: String { stdout + stderr }

    public init(arguments: [String] = [], status: Int32, stdout: String, stderr: String) {
        self.arguments = arguments
        self.status = status
        self.stdout = stdout
        self.stderr = stderr
    }

    public init(_ output: ToolOutput, arguments: [String]) {
        self.init(arguments: arguments, status: output.status, stdout: output.stdoutText, stderr: output.stderr)
    }

    /// stdout as a JSON object; a failure names the command, its exit status and both streams.
    public func json() throws -> [String: Any] {
        // Not JSON is not swallowed: #require fails the test with the command and both streams.
        try #require((try? JSONSerialization.jsonObject(with: Data(stdout.utf8))) as? [String: Any],
                     "not a JSON object from \(arguments.joined(separator: " ")) (exit \(status)): stdout \"\(stdout)\" stderr \"\(stderr)\"")
    }
}

/// Runs the built recordctl with a clean environment (plus `environment`).
public func recordctl(_ arguments: [String], environment: [String: String] = [:]) throws -> CommandResult {
    let binary = try #require(recordctlBinary, "build recordctl first: swift build --build-tests")
    var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("RECORDCTL_") }
    env.merge(environment) { $1 }
    return CommandResult(try runProcess(binary, arguments, environment: env), arguments: arguments)
}

/// Runs an external tool (ffprobe, ffmpeg) and captures its output.
public func tool(_ name: String, _ arguments: [String]) throws -> CommandResult {
    CommandResult(try runTool(name, arguments), arguments: arguments)
}

import ArgumentParser
import Foundation
import Shared

/// A failure that ends recordctl with a specific exit code and message (printed to stderr by
/// `RecordCtl.main()`).
///
/// Exit codes: 0 success, 1 the operation failed (the server said no, a file has problems),
/// 2 usage (bad arguments), 3 the server cannot be reached or refused the admin token.
struct CLIFailure: Error, CustomStringConvertible {
    enum Code: Int32 { case failed = 1, usage = 2, unreachable = 3 }
    var code: Code
    var message: String
    init(_ code: Code, _ message: String) { self.code = code; self.message = message }
    var description: String { message }
}

/// How to reach the record-server admin API; shared by every command that talks to it.
struct ConnectionOptions: ParsableArguments {
    static let defaultServer = "http://127.0.0.1:7444"

    @Option(name: .long, help: ArgumentHelp(
        "Admin API base URL (default: $RECORDCTL_SERVER, else \(Self.defaultServer)).", valueName: "url"))
    var server: String?

    @Option(name: .customLong("token-file"), help: ArgumentHelp(
        "File holding the admin token (default: $RECORDCTL_TOKEN_FILE).", valueName: "path"))
    var tokenFile: String?

    @Option(name: .long, help: ArgumentHelp(
        "The admin token itself (discouraged: visible in the process list; prefer --token-file or $RECORDCTL_TOKEN).",
        valueName: "token"))
    var token: String?

    @Option(name: .customLong("ca-file"), help: ArgumentHelp(
        "CA certificate (PEM) to trust for an https:// server, e.g. one run with --admin-tls (default: $RECORDCTL_CA_FILE, else the system's).",
        valueName: "path"))
    var caFile: String?

    @Option(name: .long, help: ArgumentHelp("Seconds to wait for each HTTP request.", valueName: "seconds"))
    var timeout: Double = 10

    @Option(name: .long, help: ArgumentHelp(
        "JSON file with {\"server\": URL, \"tokenFile\": PATH} (default: $RECORDCTL_CONFIG, else ~/.config/recordctl/config.json if present). Flags and environment variables override it.",
        valueName: "path"))
    var config: String?

    /// Connection settings from a file: the lowest precedence after the built-in default.
    struct FileSettings: Decodable {
        var server: String?
        var tokenFile: String?
        enum CodingKeys: String, CodingKey, CaseIterable { case server, tokenFile }
    }

    func fileSettings(environment: [String: String]) throws -> FileSettings? {
        let explicit = config ?? environment["RECORDCTL_CONFIG"].flatMap { $0.isEmpty ? nil : $0 }
        let path = explicit ?? (environment["HOME"].map { $0 + "/.config/recordctl/config.json" } ?? "")
        guard !path.isEmpty, FileManager.default.fileExists(atPath: path) else {
            if let explicit { throw CLIFailure(.usage, "configuration file \(explicit) does not exist") }
            return nil
        }
        do {
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            // A misspelt key (`tokenfile`) would otherwise leave the setting at its default unseen.
            // (Not JSON at all: the decoder below reports it.)
            if let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any],
               let unknown = StrictDecoding.unknownKeys(inJSON: object, schema: .init(FileSettings.CodingKeys.self)) {
                throw CLIFailure(.usage, "\(path): \(unknown.message)")
            }
            return try JSONDecoder().decode(FileSettings.self, from: data)
        } catch let failure as CLIFailure {
            throw failure
        } catch {
            throw CLIFailure(.usage, "cannot read \(path): expected {\"server\": \"http://HOST:PORT\", \"tokenFile\": \"PATH\"} (\(error))")
        }
    }

    init() {}

    func validate() throws {
        guard timeout > 0 else { throw ValidationError("--timeout must be positive") }
    }

    /// The server URL: flag, then environment, then the default.
    func resolvedServer(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> URL {
        let fromFile = try fileSettings(environment: environment)?.server
        let text = server ?? environment["RECORDCTL_SERVER"].flatMap { $0.isEmpty ? nil : $0 } ?? fromFile ?? Self.defaultServer
        let trimmed = text.hasSuffix("/") ? String(text.dropLast()) : text
        guard let url = URL(string: trimmed), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              url.host != nil else {
            throw CLIFailure(.usage, "invalid server URL \"\(text)\"; expected something like \(Self.defaultServer)")
        }
        return url
    }

    /// The token: --token, --token-file, $RECORDCTL_TOKEN, $RECORDCTL_TOKEN_FILE, the config file's tokenFile.
    /// Never included in any message.
    func resolvedToken(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> String? {
        if let token { return token }
        if let tokenFile { return try Self.readToken(tokenFile) }
        if let value = environment["RECORDCTL_TOKEN"], !value.isEmpty { return value }
        if let file = environment["RECORDCTL_TOKEN_FILE"], !file.isEmpty { return try Self.readToken(file) }
        if let file = try fileSettings(environment: environment)?.tokenFile { return try Self.readToken(file) }
        return nil
    }

    static func readToken(_ path: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CLIFailure(.usage, "cannot read the token file \(path)")
        }
        let token = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !token.isEmpty else { throw CLIFailure(.usage, "the token file \(path) is empty") }
        return token
    }

    func client() throws -> AdminClient {
        let environment = ProcessInfo.processInfo.environment
        let ca = caFile ?? environment["RECORDCTL_CA_FILE"].flatMap { $0.isEmpty ? nil : $0 }
        if let ca, !FileManager.default.isReadableFile(atPath: ca) {
            throw CLIFailure(.usage, "cannot read the CA certificate \(ca) (--ca-file / $RECORDCTL_CA_FILE)")
        }
        return AdminClient(baseURL: try resolvedServer(environment: environment), token: try resolvedToken(environment: environment),
                           timeout: timeout, caFile: ca)
    }
}

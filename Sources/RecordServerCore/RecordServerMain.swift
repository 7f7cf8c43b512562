public import ArgumentParser
import Foundation
import CMallocTuning
import Logging

/// `record-server`: the central recording host.
public struct RecordServerCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "record-server",
        abstract: "Receive recordings from capture agents over TLS and write them to crash-safe MP4 files.",
        discussion: """
        Settings come from a JSON file (--config, default \(ServerConfiguration.defaultPath) if it exists) and are \
        overridden by the flags below. See docs/configuration.md for every option.
        """
    )

    @Option(help: "Configuration file (JSON).") var config: String?
    @Option(help: "Agent listener as HOST:PORT (default 0.0.0.0:7443).") var listen: String?
    @Option(name: .customLong("admin-listen"), help: "Admin API listener as HOST:PORT (default 127.0.0.1:7444).") var adminListen: String?
    @Option(name: .customLong("data-dir"), help: "Directory for recordings and the catalog.") var dataDirectory: String?
    @Option(help: ArgumentHelp("Where the catalog lives: sqlite (default, in the data directory) or a PostgreSQL URL.",
                               valueName: "sqlite|postgresql://USER@HOST:PORT/DATABASE?password_file=PATH")) var catalog: String?
    @Option(name: .customLong("object-store"), help: ArgumentHelp("Upload finished recordings to this S3-compatible bucket.",
                                                                  valueName: "s3://BUCKET[/PREFIX]?endpoint=URL&region=REGION"))
    var objectStore: String?
    @Option(name: .customLong("object-store-access-key-file"), help: "File holding the object store's access key id.")
    var objectStoreAccessKeyFile: String?
    @Option(name: .customLong("object-store-secret-key-file"), help: "File holding the object store's secret access key.")
    var objectStoreSecretKeyFile: String?
    @Option(help: "CA certificate (PEM) that agent certificates must chain to.") var ca: String?
    @Option(help: "Server certificate (PEM).") var cert: String?
    @Option(help: "Server private key (PEM).") var key: String?
    @Option(name: .customLong("revocation-list"), help: "revoked.json written by `recordctl ca revoke`.") var revocationList: String?
    @Option(name: .customLong("admin-token"), help: "Bearer token for the admin API (prefer --admin-token-file).") var adminToken: String?
    @Option(name: .customLong("admin-token-file"), help: "File holding the admin API bearer token.") var adminTokenFile: String?
    @Option(name: .customLong("resume-window"), help: "Seconds an interrupted session waits for its agent to resume.") var resumeWindow: Int?
    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.") var logLevel: String?
    @Option(name: .customLong("webhook"), help: ArgumentHelp(
        "Post events to a webhook receiver, signed with the secret in a file; repeat for several (replaces the file's webhooks).",
        valueName: "url,secret-file=path[,events=type+type]")) var webhooks: [String] = []
    @Flag(name: .customLong("admin-tls"), help: "Serve the admin API and web console over HTTPS with the server's certificate (--cert, --key).")
    var adminTLS = false
    @Flag(name: .customLong("insecure-plaintext"), help: "DEVELOPMENT ONLY: no TLS, agents not authenticated.") var insecurePlaintext = false

    public init() {}

    public func run() async throws {
        Self.returnFreedMemoryToTheSystem()
        // Everything up to a running server is configuration: a problem there exits 64 with a
        // message naming the cause (the systemd unit does not restart on 64), never 1.
        let server: RecordServer
        do {
            server = try makeServer()
        } catch let error as ValidationError {
            throw error
        } catch {
            FileHandle.standardError.write(Data("record-server: \(error)\n".utf8))
            throw ExitCode(64)
        }
        try await server.run()
    }

    private func makeServer() throws -> RecordServer {
        var configuration: ServerConfiguration
        if let config {
            configuration = try ServerConfiguration.load(path: config)
        } else if FileManager.default.fileExists(atPath: ServerConfiguration.defaultPath) {
            configuration = try ServerConfiguration.load(path: ServerConfiguration.defaultPath)
        } else {
            configuration = ServerConfiguration()
        }
        configuration = try configuration.merging(overrides: .init(
            listen: listen, adminListen: adminListen, dataDirectory: dataDirectory, caCertificate: ca, certificate: cert,
            privateKey: key, revocationList: revocationList, adminToken: adminToken, adminTokenFile: adminTokenFile,
            insecurePlaintext: insecurePlaintext ? true : nil, resumeWindowSeconds: resumeWindow, logLevel: logLevel,
            webhooks: webhooks.isEmpty ? nil : webhooks, adminTLS: adminTLS ? true : nil, catalog: catalog,
            objectStore: objectStore, objectStoreAccessKeyFile: objectStoreAccessKeyFile, objectStoreSecretKeyFile: objectStoreSecretKeyFile))
        do { try configuration.validate() } catch { throw ValidationError("\(error)") }
        let level = configuration.logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "record-server")
        return try RecordServer(configuration: configuration, logger: logger)
    }
}

extension RecordServerCommand {
    /// Large buffers (a partly received 8 MiB frame, a flood of them from a hostile peer) are
    /// mapped on their own and given back when freed, and the heap is trimmed early, so the
    /// server's memory returns to its baseline once such a peer is gone instead of staying at
    /// its peak in glibc's arenas. Fixed: glibc would raise its own threshold to the largest
    /// buffer freed so far (8 MiB after one partial frame). 128 KiB (glibc's starting value)
    /// gave the same memory figures (docs/benchmarks.md); the hardware-bench failures once
    /// blamed on it were the bench's own measurement, which failed at 64 KiB as well.
    static let mmapThreshold: Int32 = 64 * 1024

    static func returnFreedMemoryToTheSystem() {
        _ = cmalloc_return_freed_memory(mmapThreshold)
    }
}

/// Lets an executable run an async command it only knows as `ParsableCommand`.
public protocol AsyncParsableCommandRunnable {
    mutating func runAsync() async throws
}

extension RecordServerCommand: AsyncParsableCommandRunnable {
    public mutating func runAsync() async throws { try await run() }
}

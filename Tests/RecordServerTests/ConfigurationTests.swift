import Foundation
import Testing
@testable import RecordServerCore

/// A directory with stand-in TLS files and a token file, removed at the end.
private final class ConfigFixture {
    let path: String
    init() throws {
        path = FileManager.default.temporaryDirectory.path + "/config-tests-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        // Validation only checks that the files are readable; content is the TLS layer's business.
        for name in ["ca.pem", "server.pem", "server-key.pem", "crl.pem"] { write(name, "-----BEGIN-----\n") }
        write("admin.token", "0123456789abcdef0123456789abcdef\n", mode: 0o600)
        write("tokens.json", #"{"tok-aaaaaaaaaaaaaaaa": "cam-1", "tok-bbbbbbbbbbbbbbbb": "cam-2"}"#)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }

    @discardableResult
    func write(_ name: String, _ text: String, mode: Int = 0o644) -> String {
        let file = path + "/" + name
        #expect(FileManager.default.createFile(atPath: file, contents: Data(text.utf8), attributes: [.posixPermissions: mode]))
        return file
    }

    /// A configuration that passes validation.
    var valid: ServerConfiguration {
        var config = ServerConfiguration()
        config.dataDirectory = path + "/data"
        config.tls = .init(caCertificate: path + "/ca.pem", certificate: path + "/server.pem", privateKey: path + "/server-key.pem")
        config.admin.tokenFile = path + "/admin.token"
        return config
    }
}

@Suite struct ConfigurationTests {
    @Test func defaults() {
        let config = ServerConfiguration()
        #expect(config.ingest == .init(host: "0.0.0.0", port: 7443))
        #expect(config.admin == .init(enabled: true, host: "127.0.0.1", port: 7444, token: nil, tokenFile: nil))
        #expect(config.dataDirectory == "/var/lib/record-server")
        #expect(config.tls.requireClientCertificate)
        #expect(config.tls.revocationList == nil)
        #expect(config.bearerTokens == nil)
        #expect(!config.insecurePlaintext)
        #expect(config.resumeWindowSeconds == 60)
        #expect(config.fsync == .fragment)
        #expect(config.fragmentSeconds == 1)
        #expect(config.segment == .init())
        #expect(config.maxSessions == 64)
        #expect(config.sessionQueueBytes == 64 * 1024 * 1024)
        #expect(config.readCoalescingMillis == 200)
        #expect(!config.failSessionOnTrackError)
        #expect(config.retention == .init())
        #expect(config.shutdownGraceSeconds == 10)
        #expect(config.logLevel == .info)
        #expect(config.warnings.isEmpty)
    }

    @Test func anEmptyFileMeansDefaults() throws {
        #expect(try ServerConfiguration.decode(Data("{}".utf8)) == ServerConfiguration())
        // A partial object keeps the defaults of the keys it leaves out.
        let partial = try ServerConfiguration.decode(Data(#"{"ingest": {"port": 9000}, "admin": {"enabled": false}}"#.utf8))
        #expect(partial.ingest == .init(host: "0.0.0.0", port: 9000))
        #expect(partial.admin.host == "127.0.0.1")
    }

    @Test func theExampleFileListsEveryOptionWithItsDefault() throws {
        let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../deploy/record-server.example.json")
        let data = try Data(contentsOf: example)
        #expect(try ServerConfiguration.decode(data) == ServerConfiguration())
        // Every key the encoder writes appears in the example, so it cannot fall behind.
        let encoded = try JSONSerialization.jsonObject(with: JSONEncoder().encode(ServerConfiguration())) as? [String: Any]
        let file = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        #expect(keyPaths(encoded ?? [:]) == keyPaths(file ?? [:]))
    }

    @Test func encodingRoundTrips() throws {
        var config = ServerConfiguration()
        config.admin.token = "t"
        config.segment = .init(maxSeconds: 600, maxBytes: 1 << 30)
        config.retention = .init(maxAgeDays: 30, maxTotalBytes: 1 << 40)
        config.fsync = .none
        config.logLevel = .debug
        #expect(try ServerConfiguration.decode(JSONEncoder().encode(config)) == config)
    }

    @Test func fileThenCommandLineThenDefaults() throws {
        let fixture = try ConfigFixture()
        let file = fixture.write("server.json", """
            {
              "ingest": {"host": "10.0.0.5", "port": 9000},
              "admin": {"tokenFile": "admin.token", "port": 9001},
              "dataDirectory": "data",
              "tls": {"certificate": "server.pem", "privateKey": "/abs/key.pem"},
              "resumeWindowSeconds": 120,
              "logLevel": "debug",
              "maxSessions": 8
            }
            """)
        let loaded = try ServerConfiguration.load(path: file)
        // Relative paths in the file are relative to the file.
        #expect(loaded.dataDirectory == fixture.path + "/data")
        #expect(loaded.tls.certificate == fixture.path + "/server.pem")
        #expect(loaded.tls.privateKey == "/abs/key.pem")
        #expect(loaded.admin.tokenFile == fixture.path + "/admin.token")

        let merged = try loaded.merging(overrides: .init(listen: "127.0.0.1:9100", dataDirectory: "elsewhere", adminToken: "cli-token-0123456789",
                                                         insecurePlaintext: true, logLevel: "trace"),
                                        workingDirectory: "/work")
        #expect(merged.ingest == .init(host: "127.0.0.1", port: 9100))          // command line
        #expect(merged.dataDirectory == "/work/elsewhere")                       // command line, relative to the cwd
        #expect(merged.admin.token == "cli-token-0123456789")
        #expect(merged.admin.tokenFile == nil, "the command-line token replaces the file's token file")
        #expect(merged.admin.port == 9001)                                       // file
        #expect(merged.resumeWindowSeconds == 120)                               // file
        #expect(merged.maxSessions == 8)                                         // file
        #expect(merged.insecurePlaintext)                                        // command line
        #expect(merged.logLevel == .trace)                                       // command line
        #expect(merged.fragmentSeconds == 1)                                     // default
        #expect(merged.tls.caCertificate == "/etc/record-server/tls/ca.pem")     // default

        let tokenFile = try loaded.merging(overrides: .init(adminListen: "[::1]:7000", adminTokenFile: "t.txt", resumeWindowSeconds: 5),
                                           workingDirectory: "/w")
        #expect(tokenFile.admin.host == "::1" && tokenFile.admin.port == 7000)
        #expect(tokenFile.admin.tokenFile == "/w/t.txt" && tokenFile.admin.token == nil)
        #expect(tokenFile.resumeWindowSeconds == 5)
        #expect(try loaded.merging(overrides: .init()) == loaded)
    }

    @Test func unknownKeysAreRejectedByName() {
        let top = #expect(throws: ConfigurationError.self) { try ServerConfiguration.decode(Data(#"{"dataDir": "/x", "logLevel": "info"}"#.utf8)) }
        #expect(top?.kind == .unknownKey)
        #expect(top?.field == "dataDir")
        #expect(top?.message.contains("did you mean \"dataDirectory\"?") == true)

        let nested = #expect(throws: ConfigurationError.self) {
            try ServerConfiguration.decode(Data(#"{"tls": {"requireClientCert": false, "colour": 1}}"#.utf8))
        }
        #expect(nested?.kind == .unknownKey)
        #expect(nested?.field == "tls.colour, tls.requireClientCert")
        #expect(nested?.message.contains("in \"tls\"") == true)
        #expect(nested?.message.contains("Known keys: caCertificate") == true)
    }

    @Test func decodingErrorsNameTheField() throws {
        func error(_ json: String) -> ConfigurationError? {
            #expect(throws: ConfigurationError.self) { try ServerConfiguration.decode(Data(json.utf8)) }
        }
        let wrongType = error(#"{"ingest": {"port": "7443"}}"#)
        #expect(wrongType?.kind == .wrongType)
        #expect(wrongType?.field == "ingest.port")
        #expect(wrongType?.message.contains("an integer") == true)

        let notObject = error(#"{"tls": true}"#)
        #expect(notObject?.field == "tls")

        let fsync = error(#"{"fsync": "always"}"#)
        #expect(fsync?.kind == .invalidValue)
        #expect(fsync?.field == "fsync")
        #expect(fsync?.message.contains("\"fragment\"") == true)

        let level = error(#"{"logLevel": "verbose"}"#)
        #expect(level?.field == "logLevel")
        #expect(level?.message.contains("trace, debug, info") == true)

        #expect(error("[1, 2]")?.kind == .wrongType)
        #expect(error(#"{"ingest": "#)?.kind == .malformedJSON)

        let missing = #expect(throws: ConfigurationError.self) { try ServerConfiguration.load(path: "/nonexistent/record-server.json") }
        #expect(missing?.kind == .unreadableFile)
        #expect(missing?.message.contains("/nonexistent/record-server.json") == true)
    }

    @Test func aCompleteConfigurationValidates() throws {
        let fixture = try ConfigFixture()
        #expect(fixture.valid.problems() == [])
        #expect(try fixture.valid.adminToken() == "0123456789abcdef0123456789abcdef")

        var disabled = fixture.valid
        disabled.admin = .init(enabled: false)
        #expect(disabled.problems() == [])
        #expect(try disabled.adminToken() == nil)

        // Development mode needs no TLS files at all, and says so loudly.
        var plaintext = ServerConfiguration()
        plaintext.insecurePlaintext = true
        plaintext.admin.enabled = false
        #expect(plaintext.problems() == [])
        #expect(plaintext.warnings.contains { $0.contains("WITHOUT TLS") })
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let field: String
        let fragment: String
        let change: @Sendable (inout ServerConfiguration, String) -> Void
        var testDescription: String { "\(field): \(fragment)" }
    }

    static let cases: [Case] = [
        Case(field: "ingest.host", fragment: "must not be empty") { c, _ in c.ingest.host = "" },
        Case(field: "ingest.port", fragment: "from 0 to 65535 (got -1)") { c, _ in c.ingest.port = -1 },
        Case(field: "admin.port", fragment: "from 0 to 65535 (got 70000)") { c, _ in c.admin.port = 70000 },
        Case(field: "admin.port", fragment: "same as ingest.port") { c, _ in c.admin.port = 7443 },
        Case(field: "admin.token", fragment: "needs a bearer token") { c, _ in c.admin.tokenFile = nil },
        Case(field: "admin.token", fragment: "both set") { c, _ in c.admin.token = "0123456789abcdef0123" },
        Case(field: "admin.token", fragment: "too short") { c, _ in c.admin = .init(token: "secret") },
        Case(field: "admin.tokenFile", fragment: "No such file") { c, p in c.admin.tokenFile = p + "/missing.token" },
        Case(field: "admin.tokenFile", fragment: "is empty") { c, p in c.admin.tokenFile = p + "/empty.token" },
        Case(field: "dataDirectory", fragment: "must be an absolute path") { c, _ in c.dataDirectory = "data" },
        Case(field: "tls.certificate", fragment: "No such file") { c, p in c.tls.certificate = p + "/nope.pem" },
        Case(field: "tls.certificate", fragment: "not a regular file") { c, p in c.tls.certificate = p },
        Case(field: "tls.privateKey", fragment: "the server's PEM private key") { c, p in c.tls.privateKey = p + "/nope.pem" },
        Case(field: "tls.caCertificate", fragment: "insecurePlaintext") { c, p in c.tls.caCertificate = p + "/nope.pem" },
        Case(field: "tls.revocationList", fragment: "No such file") { c, p in c.tls.revocationList = p + "/nope.crl" },
        Case(field: "bearerTokens", fragment: "must authenticate with bearer tokens") { c, _ in c.tls.requireClientCertificate = false },
        Case(field: "bearerTokens", fragment: "not a valid agent id") { c, p in
            c.tls.requireClientCertificate = false
            c.bearerTokens = p + "/bad-tokens.json"
        },
        Case(field: "resumeWindowSeconds", fragment: "from 1 to 3600 seconds (got 0)") { c, _ in c.resumeWindowSeconds = 0 },
        Case(field: "resumeWindowSeconds", fragment: "from 1 to 3600 seconds (got 3601)") { c, _ in c.resumeWindowSeconds = 3601 },
        Case(field: "fragmentSeconds", fragment: "from 0.1 to 10") { c, _ in c.fragmentSeconds = 0 },
        Case(field: "segment.maxSeconds", fragment: "at least fragmentSeconds") { c, _ in c.segment.maxSeconds = 0.5 },
        Case(field: "segment.maxBytes", fragment: "at least 1048576") { c, _ in c.segment.maxBytes = 1000 },
        Case(field: "maxSessions", fragment: "from 1 to 10000") { c, _ in c.maxSessions = 0 },
        Case(field: "sessionQueueBytes", fragment: "one largest frame") { c, _ in c.sessionQueueBytes = 1024 },
        Case(field: "readCoalescingMillis", fragment: "from 0 (off) to 1000") { c, _ in c.readCoalescingMillis = 5000 },
        Case(field: "retention.maxAgeDays", fragment: "positive number of days") { c, _ in c.retention.maxAgeDays = -1 },
        Case(field: "retention.maxTotalBytes", fragment: "positive number of bytes") { c, _ in c.retention.maxTotalBytes = 0 },
        Case(field: "shutdownGraceSeconds", fragment: "from 0 to 600") { c, _ in c.shutdownGraceSeconds = -1 },
    ]

    @Test(arguments: cases)
    func eachValidationErrorNamesItsFieldAndFix(_ testCase: Case) throws {
        let fixture = try ConfigFixture()
        fixture.write("empty.token", "  \n")
        fixture.write("bad-tokens.json", #"{"tok-aaaaaaaaaaaaaaaa": "../etc"}"#)
        var config = fixture.valid
        testCase.change(&config, fixture.path)
        let error = #expect(throws: ConfigurationError.self) { try config.validate() }
        #expect(error?.kind == .invalidValue)
        #expect(error?.field == testCase.field)
        #expect(error?.message.contains(testCase.fragment) == true, "\(error?.message ?? "no error")")
        #expect(config.problems().count == 1, "exactly one problem: \(config.problems())")
    }

    @Test func addressesFromTheCommandLine() throws {
        #expect(try ServerConfiguration.parseAddress("0.0.0.0:7443", field: "--listen") == .init(host: "0.0.0.0", port: 7443))
        #expect(try ServerConfiguration.parseAddress("[::]:8443", field: "--listen") == .init(host: "::", port: 8443))
        #expect(try ServerConfiguration.parseAddress("rec.example:1", field: "--listen") == .init(host: "rec.example", port: 1))
        for (bad, fragment) in [("7443", "has no port"), (":7443", "has no host"), ("h:65536", "0 to 65535"), ("h:x", "0 to 65535"),
                                ("::1:7443", "in brackets"), ("[::1]7443", "[address]:port")] {
            let error = #expect(throws: ConfigurationError.self) { _ = try ServerConfiguration.parseAddress(bad, field: "--listen") }
            #expect(error?.field == "--listen")
            #expect(error?.message.contains(fragment) == true, "\(bad): \(error?.message ?? "")")
        }
        let level = #expect(throws: ConfigurationError.self) { _ = try ServerConfiguration().merging(overrides: .init(logLevel: "loud")) }
        #expect(level?.field == "--log-level")
    }

    @Test func bearerTokensLoadWhenClientCertificatesAreOff() throws {
        let fixture = try ConfigFixture()
        var config = fixture.valid
        config.tls.requireClientCertificate = false
        config.bearerTokens = fixture.path + "/tokens.json"
        #expect(config.problems() == [])
        #expect(try config.loadBearerTokens() == ["tok-aaaaaaaaaaaaaaaa": "cam-1", "tok-bbbbbbbbbbbbbbbb": "cam-2"])
        config.tls.requireClientCertificate = true
        #expect(config.warnings.contains { $0.contains("bearerTokens is set but") })
    }

    @Test func derivedSessionSettings() {
        var config = ServerConfiguration()
        config.fragmentSeconds = 0.5
        config.fsync = .none
        config.segment = .init(maxSeconds: 300, maxBytes: 1 << 30)
        config.failSessionOnTrackError = true
        config.resumeWindowSeconds = 90
        config.sessionQueueBytes = 3 << 20
        config.fragmentSeconds = 0.1234567896  // rounded to the nanosecond, not truncated
        let settings = config.sessionSettings
        #expect(settings.fragmentDuration == 123_456_790)
        #expect(settings.maxQueuedBytesPerTrack == 3 << 20)
        config.fragmentSeconds = 0.5
        let halfSecond = config.sessionSettings
        #expect(halfSecond.fragmentDuration == 500_000_000)
        #expect(settings.durability == .none)
        #expect(settings.maxSegmentDuration == 300_000_000_000)
        #expect(settings.maxSegmentBytes == 1 << 30)
        #expect(settings.failSessionOnTrackError)
        #expect(settings.resumeWindow == .seconds(90))
        #expect(ServerConfiguration().shutdownGrace == .seconds(10))
    }

    private func keyPaths(_ object: [String: Any], prefix: String = "") -> Set<String> {
        var paths: Set<String> = []
        for (key, value) in object {
            paths.insert(prefix + key)
            if let nested = value as? [String: Any] { paths.formUnion(keyPaths(nested, prefix: prefix + key + ".")) }
        }
        return paths
    }
}

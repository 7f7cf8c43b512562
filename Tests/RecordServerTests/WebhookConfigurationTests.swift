import AdminModels
import Foundation
@testable import RecordServerCore
import Testing
import TestSupport

/// `webhooks` in the configuration file and `--webhook` on the command line: the secret only
/// ever from a file the server checks, and errors that name the field, the file and the fix.
@Suite("Webhook configuration")
struct WebhookConfigurationTests {
    let directory: TemporaryDirectory

    init() throws { directory = try TemporaryDirectory(prefix: "webhook-config") }

    /// A configuration whose only possible problems are its webhooks.
    func configuration(_ webhooks: [ServerConfiguration.Webhook]) -> ServerConfiguration {
        var config = ServerConfiguration()
        config.insecurePlaintext = true
        config.admin.enabled = false
        config.webhooks = webhooks
        return config
    }

    func secretFile(_ content: String = WebhookTests.secret, mode: Int = 0o600, name: String = "hook.secret") throws -> String {
        let path = directory.path + "/" + name
        try Data(content.utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
        return path
    }

    func onlyProblem(_ config: ServerConfiguration) throws -> ConfigurationError {
        let problems = config.problems()
        #expect(problems.count == 1, "\(problems)")
        return try #require(problems.first)
    }

    @Test func aValidReceiverBecomesATarget() throws {
        let config = configuration([.init(url: "https://user:pw@hooks.example.com:8443/rec?token=x", secretFile: try secretFile(),
                                          events: ["session.started", "recording.finished"])])
        #expect(config.problems() == [])
        let target = try #require(try config.webhookTargets().first)
        #expect(target.eventTypes == [.sessionStarted, .recordingFinished])
        #expect(target.wants(.recordingFinished) && !target.wants(.agentOnline))
        // Metrics and logs never show the URL's credentials or query.
        #expect(target.label == "https://hooks.example.com:8443/rec")
        #expect(try configuration([.init(url: "http://127.0.0.1/h", secretFile: try secretFile())]).webhookTargets().first?.eventTypes == nil)
    }

    @Test func aMissingEmptyShortOrWorldReadableSecretIsRefusedNamingTheFile() throws {
        let missing = try onlyProblem(configuration([.init(url: "https://h.example/x", secretFile: directory.path + "/absent.secret")]))
        #expect(missing.field == "webhooks[0].secretFile" && missing.message.contains(directory.path + "/absent.secret"), "\(missing)")
        #expect(missing.message.contains("No such file") && missing.message.contains("openssl rand -hex 32"), "the cause and the fix: \(missing)")

        let empty = try onlyProblem(configuration([.init(url: "https://h.example/x", secretFile: try secretFile("\n", name: "empty"))]))
        #expect(empty.message.contains("empty"), "\(empty)")

        let short = try onlyProblem(configuration([.init(url: "https://h.example/x", secretFile: try secretFile("abc", name: "short"))]))
        #expect(short.message.contains("too short") && short.message.contains("openssl rand"), "\(short)")

        let open = try secretFile(mode: 0o644, name: "open.secret")
        let readable = try onlyProblem(configuration([.init(url: "https://h.example/x", secretFile: open)]))
        #expect(readable.field == "webhooks[0].secretFile")
        #expect(readable.message.contains(open) && readable.message.contains("every user") && readable.message.contains("chmod 600"), "\(readable)")
        #expect(throws: ConfigurationError.self) { try configuration([.init(url: "https://h.example/x", secretFile: open)]).webhookTargets() }
    }

    @Test(arguments: ["ftp://h.example/x", "hooks.example.com/x", "https://", "not a url"])
    func aURLThatIsNotHTTPIsRefused(_ url: String) throws {
        let problem = try onlyProblem(configuration([.init(url: url, secretFile: try secretFile())]))
        #expect(problem.field == "webhooks[0].url" && problem.message.contains("is not an http or https URL"), "\(problem)")
    }

    @Test func unknownEventTypesAndRepeatedReceiversAreRefused() throws {
        let secret = try secretFile()
        let unknown = try onlyProblem(configuration([.init(url: "https://h.example/x", secretFile: secret, events: ["session.start"])]))
        #expect(unknown.field == "webhooks[0].events" && unknown.message.contains("\"session.start\" is not an event type"))
        #expect(unknown.message.contains("session.started") && unknown.message.contains("recording.recovered"), "the known types are listed")
        let none = try onlyProblem(configuration([.init(url: "https://h.example/x", secretFile: secret, events: [])]))
        #expect(none.message.contains("is empty"))
        let twice = try onlyProblem(configuration([.init(url: "https://h.example/x", secretFile: secret),
                                                   .init(url: "https://h.example/x?again", secretFile: secret)]))
        #expect(twice.field == "webhooks[1].url" && twice.message.contains("listed twice"), "\(twice)")
    }

    @Test func theFileFormResolvesTheSecretNextToItAndIsStrict() throws {
        _ = try secretFile()
        let file = directory.path + "/server.json"
        try Data(#"{"webhooks": [{"url": "https://h.example/x", "secretFile": "hook.secret", "events": ["agent.capture_failed"]}]}"#.utf8)
            .write(to: URL(fileURLWithPath: file))
        let loaded = try ServerConfiguration.load(path: file)
        #expect(loaded.webhooks == [.init(url: "https://h.example/x", secretFile: directory.path + "/hook.secret", events: ["agent.capture_failed"])])
        #expect(try ServerConfiguration.decode(JSONEncoder().encode(loaded)) == loaded)

        let typo = #expect(throws: ConfigurationError.self) {
            try ServerConfiguration.decode(Data(#"{"webhooks": [{"url": "https://h.example/x", "secret": "s"}]}"#.utf8))
        }
        #expect(typo?.kind == .unknownKey && typo?.field?.contains("webhooks[0]") == true, "\(String(describing: typo))")
        let noURL = #expect(throws: ConfigurationError.self) {
            try ServerConfiguration.decode(Data(#"{"webhooks": [{"secretFile": "s"}]}"#.utf8))
        }
        #expect(noURL?.field == "webhooks[0].url" && noURL?.message == "is required", "\(String(describing: noURL))")
    }

    @Test func theCommandLineFormTakesTheSecretFromAFileAndKeepsCommasInTheURL() throws {
        let value = "https://h.example/x?a=1,2,secret-file=hook.secret,events=session.started+session.ended"
        let merged = try ServerConfiguration().merging(overrides: .init(webhooks: [value]), workingDirectory: directory.path)
        #expect(merged.webhooks == [.init(url: "https://h.example/x?a=1,2", secretFile: directory.path + "/hook.secret",
                                          events: ["session.started", "session.ended"])])

        let noSecret = #expect(throws: ConfigurationError.self) {
            try ServerConfiguration().merging(overrides: .init(webhooks: ["https://h.example/x"]))
        }
        #expect(noSecret?.field == "--webhook" && noSecret?.message.contains("secret-file=PATH") == true, "\(String(describing: noSecret))")
    }
}

import Foundation
@testable import RecordServerCore
import Shared
import Testing
import TestSupport

/// schemathesis (PyPI) against a real record-server, from the OpenAPI document the server
/// itself serves: every operation but the endless `GET /v1/events` and track streams, with generated valid and
/// invalid input. It fails on a 5xx, a status, content type, header or body the document does
/// not allow, valid input refused, invalid input accepted, or a route that works without the
/// token. scripts/api-fuzz.sh runs the same with many more examples (docs/benchmarks.md).
@Suite("API fuzzing with schemathesis", .serialized)
struct APIFuzzTests {
    /// Per operation and phase: about 1,500 requests, under a minute on two busy cores.
    /// scripts/api-fuzz.sh sets `API_FUZZ_EXAMPLES` (and a random `API_FUZZ_SEED`) for its longer run.
    static let examplesPerOperation = ProcessInfo.processInfo.environment["API_FUZZ_EXAMPLES"].flatMap { Int($0) } ?? 100
    /// Fixed in the test command's run, so it tries the same cases every time.
    static let seed = ProcessInfo.processInfo.environment["API_FUZZ_SEED"].flatMap { Int($0) } ?? 17

    @Test(.timeLimit(.minutes(30)))
    func schemathesisFindsNothingAgainstARealServerWithRealRecordings() async throws {
        try Schemathesis.requireInstalled()
        try await HeavyTests.exclusively { try await fuzz() }
    }

    private func fuzz() async throws {
        let fixture = try ServerFixture(prefix: "api-fuzz")
        let port = try await fixture.start()
        let server = try await APIFuzzServer.withContent(fixture, port: port)

        let result = try await runToolOffPool(Schemathesis.executable, try APIFuzzServer.arguments(
            fixture, examples: Self.examplesPerOperation, seed: Self.seed))
        server.stopHeartbeats()
        if let log = ProcessInfo.processInfo.environment["API_FUZZ_LOG"] {
            try result.stdout.write(to: URL(fileURLWithPath: log))
        }
        #expect(result.status == 0, "schemathesis found problems:\n\(result.stdoutText.suffix(24000))\n\(result.stderr.suffix(4000))")
        // It ran every operation it was given, each with its checks, and reached real
        // recordings, not only 404s: it deleted the one it was given to delete, and only that.
        #expect(result.stdoutText.contains("Tested: 14"), "\(result.stdoutText.prefix(3000))")
        #expect(try fixture.recordings(session: "s-doomed").isEmpty)
        #expect(try fixture.recordings(session: "s-kept").map(\.id) == ["s-kept-0001"])

        // The live session went on through it all (stop and cancel only reach its agent, which
        // ignores them here) and still ends cleanly.
        let closed = try await server.finishLiveSession()
        #expect(closed.outcome == .finalized)
        await fixture.stop()
    }
}

/// The server state the fuzz runs against: an agent, `fuzz-agent`, connected, with a live
/// session (`s-live`, so its start is a 409 and its file a 409) and two finished ones
/// (`s-kept`, downloaded; `s-doomed`, which DELETE may remove).
final class APIFuzzServer {
    static let agentID = "fuzz-agent"
    let agent: TestAgent
    let live: SessionContent
    private let heartbeats: Task<Void, Never>

    private init(agent: TestAgent, live: SessionContent) {
        self.agent = agent
        self.live = live
        // A real agent's heartbeats: the server closes a connection silent for 30 s, and the
        // run is longer than that.
        heartbeats = Task {
            var nonce: UInt64 = 0
            while !Task.isCancelled {
                nonce += 1
                // A failed send means the connection is gone; the checks after the run see it.
                try? await agent.send(.heartbeat(Heartbeat(nonce: nonce, originTime: 0)))
                // A cancelled sleep ends the loop at its next check.
                try? await Task.sleep(for: .seconds(5))
            }
        }
    }

    static func withContent(_ fixture: ServerFixture, port: Int) async throws -> APIFuzzServer {
        let agent = try await fixture.connectAgent(agentID, port: port)
        for id in ["s-kept", "s-doomed"] {
            let content = try SessionContent.make(sessionID: SessionID(stringLiteral: id), seconds: 1)
            _ = try await agent.open(content.open)
            for sample in content.samples { try await agent.send(.sample(sample)) }
            let closed = try await agent.close(content.open.sessionID, finalSequence: UInt64(content.samples.count))
            guard closed.outcome == .finalized else { throw TestAgentError("\(id) ended \(closed.outcome)") }
        }
        let live = try SessionContent.make(sessionID: "s-live", seconds: 1)
        _ = try await agent.open(live.open)
        for sample in live.samples.prefix(live.samples.count / 2) { try await agent.send(.sample(sample)) }
        return APIFuzzServer(agent: agent, live: live)
    }

    func stopHeartbeats() { heartbeats.cancel() }

    func finishLiveSession() async throws -> SessionClosed {
        for sample in live.samples.dropFirst(live.samples.count / 2) { try await agent.send(.sample(sample)) }
        return try await agent.close(live.open.sessionID, finalSequence: UInt64(live.samples.count))
    }

    /// The ids schemathesis mixes into what it generates, so that real recordings are read,
    /// downloaded in ranges and deleted, and a real agent is asked to start (409: it records).
    static let configuration = """
        hooks = "\(BuiltProducts.repositoryRoot.appendingPathComponent("scripts/lib/schemathesis_hooks.py").path)"

        # No crash cache in the working directory (the checkout).
        [cache]
        enabled = false

        [dictionaries]
        readable = { values = ["s-kept-0001", "s-doomed-0001", "s-live-0001"] }
        deletable = { values = ["s-doomed-0001", "s-live-0001"] }
        agents = { values = ["\(agentID)"] }
        sessions = { values = ["s-kept", "s-live"] }

        [[operations]]
        include-operation-id = ["getRecording", "downloadRecording", "headRecording"]
        parameters = { "path.id" = { dictionary = "readable", probability = 0.5 } }

        # Only these: ids taken from responses would delete s-kept, and the downloads want it.
        [[operations]]
        include-operation-id = "deleteRecording"
        parameters = { "path.id" = { dictionary = "deletable", probability = 0.5 } }
        phases.examples.extra-data-sources.responses = false
        phases.coverage.extra-data-sources.responses = false
        phases.fuzzing.extra-data-sources.responses = false

        [[operations]]
        include-operation-id = "listRecordings"
        parameters = { "query.agent" = { dictionary = "agents", probability = 0.5 } }

        [[operations]]
        include-operation-id = "startSession"
        parameters = { "body.agent" = { dictionary = "agents", probability = 0.5 } }

        # Real sessions, so that ranges are really cut. A schema-valid range can still hold
        # nothing (422 empty_range) or name a track the session lacks (400): both are answers.
        [[operations]]
        include-operation-id = "exportSession"
        parameters = { "path.id" = { dictionary = "sessions", probability = 0.5 } }
        checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "401", "404", "409", "413", "422", "503"]
        """

    /// `schemathesis run` against the fixture's admin listener, loading the document it serves.
    static func arguments(_ fixture: ServerFixture, examples: Int, seed: Int) throws -> [String] {
        let config = try fixture.scratch.write(configuration, to: "schemathesis.toml")
        return ["--config-file", config, "run", fixture.adminURL + OpenAPIDocument.path,
                "--header", "Authorization: Bearer \(ServerFixture.adminToken)",
                "--checks", checks.joined(separator: ","),
                // The event stream never ends by itself (RecordServerTests/ServerEventsTests covers it).
                "--exclude-path", "/v1/events",
                // Nor does a live session's track stream (RecordCtlTests' track-stream test covers it).
                "--exclude-path", "/v1/sessions/{id}/tracks/{label}/stream",
                // The web console's HTML pages and sign-in form (the browser test in
                // RecordCtlTests drives them, refusals included).
                "--exclude-path-regex", "^/console", "--exclude-path", "/",
                // No stateful phase: the document declares no links between operations.
                "--phases", "examples,coverage,fuzzing",
                "--max-examples", String(examples), "--workers", "1",
                "--seed", String(seed), "--generation-database", "none", "--no-color",
                // Generous: the rest of the test run shares the two cores.
                "--request-timeout", "30"]
    }

    /// Every check that fits this API. Left out: `unsupported_method` and
    /// `allow_header_conformance` (a known path with another method is 404, as documented, not
    /// 405), and the stateful ones (no links).
    static let checks = [
        "not_a_server_error", "status_code_conformance", "content_type_conformance", "response_headers_conformance",
        "response_schema_conformance", "negative_data_rejection", "positive_data_acceptance", "missing_required_header",
        "ignored_auth",
    ]
}

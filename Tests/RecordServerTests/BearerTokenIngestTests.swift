import Foundation
import NIOSSL
@testable import RecordServerCore
import Shared
import Testing
import TestSupport

/// Agents without client certificates, authenticated by the bearer token in their Hello
/// (`tls.requireClientCertificate` false plus `bearerTokens`; protocol.md §2, §6.1). In this
/// mode anyone who reaches the port completes TLS, so what an unauthenticated peer may hold is
/// bounded by the Hello limits and the pre-authentication budget (§9; issue 14, finding 5).
@Suite("Bearer-token agents", .serialized)
struct BearerTokenIngestTests {
    static let token = "tok-front-0123456789abcdef"

    /// Starts the fixture's server in bearer-token mode with one token for `cam-front`.
    private func startServer(_ fixture: ServerFixture) async throws -> Int {
        let tokens = fixture.directory + "/tokens.json"
        try Data(#"{"\#(Self.token)": "cam-front"}"#.utf8).write(to: URL(fileURLWithPath: tokens))
        #expect(chmod(tokens, 0o600) == 0)
        fixture.configuration.tls.requireClientCertificate = false
        fixture.configuration.bearerTokens = tokens
        return try await fixture.start()
    }

    @Test("an agent with its token and no certificate records a complete file")
    func aTokenRecords() async throws {
        let fixture = try ServerFixture()
        let port = try await startServer(fixture)
        let content = try SessionContent.make(sessionID: "s-token", seconds: 2)
        let agent = try await TestAgent.connect(port: port, tls: try fixture.anonymousTLS())
        _ = try await agent.hello(agentID: "cam-front", token: Self.token)
        _ = try await agent.open(content.open)
        for sample in content.samples { try await agent.send(.sample(sample)) }
        let closed = try await agent.close("s-token", finalSequence: UInt64(content.samples.count))
        #expect(closed.durableSequence == UInt64(content.samples.count))
        await agent.disconnect()
        await fixture.stop()
        let recording = try #require(try fixture.recordings(session: "s-token").first)
        #expect(recording.status == .completed)
        try IngestTests().assertFile(recording.path, content: content)
    }

    @Test("a wrong token, the token under another agent id, or no token: authenticationFailed, and the connection ends",
          arguments: [("wrong token", "cam-front", "tok-wrong-0123456789abcdef"), ("another agent's id", "cam-back", token),
                      ("no token", "cam-front", "")])
    func refused(_ name: String, agentID: String, token: String) async throws {
        let fixture = try ServerFixture()
        let port = try await startServer(fixture)
        let agent = try await TestAgent.connect(port: port, tls: try fixture.anonymousTLS())
        try await agent.send(.hello(Hello(agentID: try Identifier(validating: agentID), softwareVersion: "test-agent 1",
                                          bearerToken: token.isEmpty ? nil : token)))
        let reply = try await agent.next()
        guard case .error(let report)? = reply else {
            Issue.record("\(name): expected Error authenticationFailed, got \(String(describing: reply))")
            return
        }
        #expect(report.code == .authenticationFailed, "\(name): \(report)")
        #expect(try await agent.next() == nil, "\(name): the server must close the connection")
        await agent.disconnect()
        await fixture.stop()
    }

    @Test("100 anonymous peers with partial Hellos: the pre-authentication budget refuses them before they hold more than it")
    func anonymousPartialHellosAreHeldToThePreAuthenticationBudget() async throws {
        let fixture = try ServerFixture()
        let port = try await startServer(fixture)
        let context = try NIOSSLContext(configuration: try fixture.anonymousTLS())
        // 100 partial Hellos of 60 KiB want 6 MiB, above the 4 MiB budget.
        let codes = try await RawClient.partialHelloFlood(port: port, context: context)
        let refused = codes.filter { $0 == Wire.Code.budgetExhausted.rawValue }.count
        // At most 68 partial Hellos of 60 KiB fit 4 MiB at once (32 refused when all 100 arrive
        // together, as in the hostile suite; fewer when a slow handshake arrives after an
        // earlier peer's Hello deadline freed its share).
        print("bearer-token mode: budgetExhausted \(refused) of 100 anonymous partial Hellos")
        #expect(refused > 0, "100 × 60 KiB exceeds the 4 MiB pre-authentication budget: \(codes)")
        // Each refusal is counted where an operator sees it (§9: metrics when a limit bites).
        let metrics = try #require(fixture.server?.metrics).exposition()
        let series = #"\#(ServerMetrics.Name.budgetRefusals){budget="pre_authentication"} "#
        let counted = metrics.split(separator: "\n").first { $0.hasPrefix(series) }.flatMap { Double($0.dropFirst(series.count)) }
        #expect(counted.map { $0 >= Double(refused) } == true, "\(series)\(counted.map { "\($0)" } ?? "missing") for \(refused) refusals")
        // A larger first frame than a Hello may be is refused before it is buffered.
        let oversize = try await RawClient.connect(port: port, context: context)
        try await oversize.send(Wire.frame(Wire.Kind.hello.rawValue, [1, 2, 3], length: 64 * 1024 + 1))
        let reply = try await oversize.message(within: .seconds(10))
        guard case .error(let code, _, _)? = reply else {
            Issue.record("expected an Error for a 64 KiB + 1 Hello, got \(String(describing: reply))")
            return
        }
        #expect(code == Wire.Code.frameTooLarge.rawValue, "\(Wire.Code(rawValue: code).map(\.label) ?? "\(code)")")
        await oversize.close()
        await fixture.stop()
    }
}

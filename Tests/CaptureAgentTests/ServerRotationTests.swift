import Testing
@testable import CaptureAgentCore

@Suite("Server addresses: round robin over the fleet")
struct ServerRotationTests {
    let a = ServerAddress(host: "rec-a.example", port: 7443, tlsHostname: "rec-a.example")
    let b = ServerAddress(host: "10.0.0.2", port: 7443, tlsHostname: nil)
    let c = ServerAddress(host: "::1", port: 9000, tlsHostname: nil)

    /// Every attempt (the first, and each after a failure or a loss) takes the next address, so
    /// one round reaches every server, whichever has taken the session over.
    @Test func eachAttemptTakesTheNextAddressInTurn() {
        var rotation = ServerRotation([a, b, c])
        let attempts = (0..<7).map { _ in rotation.nextAddress() }
        #expect(attempts.map(\.address) == [a, b, c, a, b, c, a])
        #expect(attempts.map(\.position) == [1, 2, 3, 1, 2, 3, 1])
    }

    @Test func oneAddressIsAlwaysTheSame() {
        var rotation = ServerRotation([a])
        #expect((0..<3).map { _ in rotation.nextAddress().address } == [a, a, a])
    }

    /// A server that refused the agent for good is skipped from then on; only when every one
    /// has refused is there a reason to stop, naming each.
    @Test func aRefusingServerIsSkippedAndOnlyAllRefusingStops() {
        var rotation = ServerRotation([a, b, c])
        #expect(rotation.nextAddress().address == a)
        #expect(rotation.nextAddress().address == b)
        #expect(rotation.refuseCurrent(because: "not trusted") == nil)
        #expect((0..<4).map { _ in rotation.nextAddress().address } == [c, a, c, a])
        #expect(rotation.refuseCurrent(because: "revoked") == nil)
        #expect((0..<2).map { _ in rotation.nextAddress().position } == [3, 3])
        #expect(rotation.refuseCurrent(because: "not TLS") == "every server refused this agent: rec-a.example:7443: revoked; "
                + "10.0.0.2:7443: not trusted; [::1]:9000: not TLS")
    }

    @Test func theOnlyServerRefusingStopsWithItsOwnMessage() {
        var rotation = ServerRotation([a])
        _ = rotation.nextAddress()
        #expect(rotation.refuseCurrent(because: "revoked") == "revoked")
    }

    @Test func addressesAreWrittenAsForServer() {
        #expect("\(a)" == "rec-a.example:7443")
        #expect("\(c)" == "[::1]:9000")
    }
}

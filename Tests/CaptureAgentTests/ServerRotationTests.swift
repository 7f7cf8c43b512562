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

    @Test func addressesAreWrittenAsForServer() {
        #expect("\(a)" == "rec-a.example:7443")
        #expect("\(c)" == "[::1]:9000")
    }
}

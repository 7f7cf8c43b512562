import Testing
@testable import CaptureAgentCore

/// How the agent words a failure to connect, and whether it keeps trying (the refusals it
/// gives up on are tested against a real server in EndToEndTests' PermanentRefusalTests).
@Suite("Connection failures")
struct ConnectionFailureTests {
    @Test func nobodyListeningIsTransient() {
        let refused = ConnectionFailure.describe(POSIXErrorLike("connect(descriptor:addr:size:): Connection refused (errno: 111)"),
                                                 host: "127.0.0.1", port: 7443)
        #expect(refused.kind == .transient)
        #expect(refused.message == "nothing accepts connections at 127.0.0.1:7443: record-server is stopped or restarting")
        let other = ConnectionFailure.describe(POSIXErrorLike("weird failure at /build/x/.build/checkouts/swift-nio/Sources/a.swift:12"),
                                               host: "h", port: 1)
        #expect(other.kind == .transient && !other.message.contains("/.build/"), "\(other.message)")
    }
}

private struct POSIXErrorLike: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

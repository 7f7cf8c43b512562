import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix
import Testing
@testable import RecordCtlCore

/// recordctl's HTTP client speaks for itself when there is no answer: the cause and what to
/// check, never a library's text.
@Suite("recordctl's admin client without a server")
struct AdminClientTests {
    @Test func aRefusedConnectionReadsAsRecordctlsOwnWording() throws {
        // Port 1 on loopback: nothing listens there, connections are refused at once.
        let client = AdminClient(baseURL: try #require(URL(string: "http://127.0.0.1:1")), token: "x", timeout: 10)
        let failure = try #require(throws: CLIFailure.self) { try client.send(.GET, "/v1/agents") }
        #expect(failure.code == .unreachable)
        #expect(failure.message == "cannot reach record-server at http://127.0.0.1:1: connection refused — "
            + "is it running with the admin API enabled? check --server / $RECORDCTL_SERVER")
    }

    @Test func transportErrorsAreNamedByCause() {
        let tenSeconds = TimeAmount.seconds(10)
        #expect(AdminTransportFailure(IOError(errnoCode: ECONNREFUSED, reason: "connect"), timeout: tenSeconds) == .refused)
        #expect(AdminTransportFailure(HTTPClientError.deadlineExceeded, timeout: tenSeconds) == .timedOut(seconds: 10))
        #expect(AdminTransportFailure(HTTPClientError.connectTimeout, timeout: tenSeconds).explanation
            == "no answer within 10.000 s — is the host up and the server not overloaded? (--timeout sets the wait)")
        #expect(AdminTransportFailure(HTTPClientError.remoteConnectionClosed, timeout: tenSeconds) == .closed)
        #expect(AdminTransportFailure(SocketAddressError.unknown(host: "nowhere", port: 1), timeout: tenSeconds) == .unknownHost)
        #expect(AdminTransportFailure(IOError(errnoCode: EHOSTUNREACH, reason: "connect"), timeout: tenSeconds)
            == .network("no route to host"))
    }
}

import Foundation
import Logging
import NIOSSL
@testable import RecordServerCore
import RecordingTLS
import Shared
import TestSupport

extension ServerFixture {
    /// Connects and completes the handshake as `agentID`.
    func connectAgent(_ agentID: String, port: Int) async throws -> TestAgent {
        let agent = try await TestAgent.connect(port: port, tls: try agentTLS(agentID))
        _ = try await agent.hello(agentID: try Identifier(validating: agentID))
        return agent
    }

}

extension SessionContent {
    /// The samples with the given tracks' samples after `cutoff` removed, renumbered without
    /// gaps (sequence numbers never have gaps on the wire).
    func dropping(track: UInt8, afterIndex cutoff: Int) -> SessionContent {
        var seen = 0
        var kept: [Sample] = []
        for s in samples {
            if s.track == track {
                seen += 1
                if seen > cutoff { continue }
            }
            var copy = s
            copy.sequence = UInt64(kept.count + 1)
            kept.append(copy)
        }
        var result = self
        result.samples = kept
        result.counts[track] = min(cutoff, counts[track] ?? 0)
        return result
    }
}

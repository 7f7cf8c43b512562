import CaptureAgentCore
import Foundation
import RecordingTLS
import Shared

extension ServerFixture {
    /// Settings for a real capture agent of this fixture's server: a certificate for `agentID`
    /// from its CA (written next to it), the given test sources, ultrafast single-thread x264 and
    /// a quick reconnect (100 ms to 1 s), so tests spend their time recording, not waiting.
    public func agentSettings(agentID: String, port: Int, sources: [String], record: Bool,
                              sessionID: Identifier? = nil, duration: Double? = nil) throws -> AgentSettings {
        let files = try writeAgentCertificate(agentID)
        return AgentSettings(
            host: "127.0.0.1", port: port,
            tls: try TLSConfigurations.client(caPEMPath: caPath, certificatePEMPath: files.certificate,
                                              privateKeyPEMPath: files.privateKey, serverHostname: "127.0.0.1"),
            tlsHostname: nil, agentID: try Identifier(validating: agentID),
            sources: try sources.map { try SourceSpec.parse($0) },
            video: VideoEncodingSettings(preset: "ultrafast", threads: 1),
            backoff: ReconnectBackoff(initial: 100_000_000, maximum: 1_000_000_000),
            record: record, sessionID: sessionID, duration: duration)
    }
}

import Foundation
import Logging
import MediaEncoding
import NIOPosix
import NIOSSL
import RecordServerCore
import RecordingTLS
import Shared
import Testing
import TestSupport
@testable import CaptureAgentCore

/// A record-server's CA, certificates and configuration (TestSupport's ``ServerFixture``, not
/// started: each test starts the server in this process or as a child process), and the
/// settings of agent `cam-e2e`.
final class EndToEndFixture: @unchecked Sendable {
    let server: ServerFixture
    var directory: TemporaryDirectory { server.scratch }
    var ca: CertificateAuthority { server.ca }
    var caPath: String { server.caPath }
    var dataDirectory: String { server.dataDirectory }
    var serverConfiguration: ServerConfiguration { server.configuration }

    /// Agent `cam-e2e`'s certificate and key files.
    let agentCertificate: (certificate: String, privateKey: String)

    init() throws {
        server = try ServerFixture(prefix: "capture-agent-tests", resumeWindowSeconds: 60, adminToken: nil)
        agentCertificate = try server.writeAgentCertificate("cam-e2e")
    }

    /// Agent `cam-e2e` with two 320x240 test cameras and test audio, recording `seconds`.
    func agentSettings(port: Int, seconds: Double, sessionID: Identifier) throws -> AgentSettings {
        try server.agentSettings(agentID: "cam-e2e", port: port,
                                 sources: ["front=test:320x240@30", "back=test:320x240@30", "tone=test:audio"],
                                 record: true, sessionID: sessionID, duration: seconds)
    }

    /// The finished recordings (MP4 files) under the data directory.
    func recordings() -> [String] { server.recordingFiles() }

    static var logger: Logger { ServerFixture.logger }
}

/// Checks the acceptance criteria on a recording of two 30 fps test cameras and test audio
/// (``checkContiguousFrames``, with the drops the agent reported in the catalog of
/// `dataDirectory`), and that sound and picture stay within a frame of each other.
func checkRecording(_ path: String, expectedFrames: ClosedRange<Int>, dataDirectory: String) throws {
    let decoded = try DecodedRecording(path: path)
    checkContiguousFrames(decoded, expected: expectedFrames, drops: try reportedDrops(in: path, dataDirectory: dataDirectory), context: path)
    let offset = try #require(decoded.worstAudioVideoOffset(fps: 30), "flashes and beeps found")
    #expect(offset <= 1.0 / 30 + 0.001, "audio/video offset \(offset * 1000) ms")
}

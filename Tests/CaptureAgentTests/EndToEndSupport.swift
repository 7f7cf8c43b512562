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

/// Checks the acceptance criteria on a recording of two 30 fps test cameras and test audio.
func checkRecording(_ path: String, expectedFrames: ClosedRange<Int>) throws {
    let decoded = try DecodedRecording(path: path)
    #expect(decoded.decodeErrors.isEmpty, "ffmpeg: \(decoded.decodeErrors)")
    #expect(decoded.streams.map(\.type).sorted() == ["audio", "video", "video"])
    #expect(decoded.streams.filter { $0.type == "video" }.allSatisfy { $0.codec == "h264" })
    #expect(decoded.streams.first { $0.type == "audio" }?.codec == "opus")
    for frames in decoded.videoFrames {
        let numbers = frames.compactMap(\.number)
        #expect(numbers.count == frames.count, "every frame's counter is readable")
        let n = numbers.count
        #expect(expectedFrames.contains(n), "\(n) frames")
        // Every counter 0..N-1 exactly once, in order.
        #expect(numbers == Array(0..<n), "first problem at \(zip(numbers, 0...).first { $0 != $1 }.map { "\($0)" } ?? "-")")
    }
    let offset = try #require(decoded.worstAudioVideoOffset(fps: 30), "flashes and beeps found")
    #expect(offset <= 1.0 / 30 + 0.001, "audio/video offset \(offset * 1000) ms")
}

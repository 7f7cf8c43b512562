import CaptureAgentCore
import Foundation
import NIOPosix
import RecordingTLS
import RecordServerCore
import Shared
import Testing

/// A stop that arrives while the agent still opens its devices (a camera negotiating, a
/// sound card slow to open) must stop the session they open. The agent's old `stopping` flag
/// was set by that first stop, so the stop the new session needed was swallowed: the
/// recording ran on until the stop timeout and the agent exited with an error.
@Suite("A stop while devices open", .serialized)
struct StopWhileOpeningTests {
    /// A y4m source on a FIFO: the device "opens" when the test writes the header, and then
    /// gets 64x48 frames until the reader goes.
    final class FIFOCamera: @unchecked Sendable {
        let path: String
        init(directory: String) throws {
            path = directory + "/camera.y4m"
            guard mkfifo(path, 0o600) == 0 else { throw CocoaError(.fileWriteUnknown) }
        }

        /// Waits until the agent's capture thread has the FIFO open (a non-blocking open for
        /// writing succeeds only once a reader is there); it then blocks reading the header.
        func waitForTheReader() async throws -> Int32 {
            while true {
                let fd = Glibc.open(path, O_WRONLY | O_NONBLOCK)
                if fd >= 0 {
                    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
                    return fd
                }
                try await Task.sleep(for: .milliseconds(20))
            }
        }

        /// Writes the header and frames on a thread of its own until the reader closes the FIFO.
        func stream(to fd: Int32) {
            Thread.detachNewThread {
                defer { close(fd) }
                let frame = Array("FRAME\n".utf8) + [UInt8](repeating: 128, count: 64 * 48 * 3 / 2)
                var chunk = Array("YUV4MPEG2 W64 H48 F15:1 Ip A1:1 C420jpeg\n".utf8)
                while true {
                    chunk += frame
                    let written = chunk.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                    guard written == chunk.count else { return }  // EPIPE: the reader is gone
                    chunk = []
                }
            }
        }
    }

    @Test(.timeLimit(.minutes(2)))
    func aStopWhileTheDevicesOpenStopsTheSessionTheyOpen() async throws {
        signal(SIGPIPE, SIG_IGN)
        let fixture = try EndToEndFixture()
        let running = try await fixture.startServer()
        let camera = try FIFOCamera(directory: fixture.directory.path)
        // One event-loop thread: the agent's loop, so the test can wait for it to have run the stop.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let settings = AgentSettings(
            host: "127.0.0.1", port: running.ingestPort,
            tls: try TLSConfigurations.client(caPEMPath: fixture.caPath, certificatePEMPath: fixture.agentCertificate.certificate,
                                              privateKeyPEMPath: fixture.agentCertificate.privateKey, serverHostname: "127.0.0.1"),
            tlsHostname: nil, agentID: "cam-e2e",
            sources: [try SourceSpec.parse("front=y4m:\(camera.path)")],
            video: VideoEncodingSettings(preset: "ultrafast", threads: 1),
            record: true, sessionID: "stop-while-opening", duration: nil,
            // Long enough that the old behaviour (waiting for the timeout) cannot pass as a stop.
            stopTimeout: 60_000_000_000)
        let agent = try AgentRuntime(settings: settings, logger: EndToEndFixture.logger, group: group)
        let recording = Task { try await agent.run() }

        // The capture thread opens the "device" and waits for its header: stop now, and let
        // the agent's loop run the stop before the device delivers.
        let fd = try await camera.waitForTheReader()
        agent.shutdown()
        try await group.next().submit {}.get()
        camera.stream(to: fd)
        let outcome = await recording.result
        await running.stop()
        try await group.shutdownGracefully()

        if case .failure(let error) = outcome {
            Issue.record("the agent did not stop the session its devices opened: \(error)")
        }
        let catalog = try Catalog(path: fixture.dataDirectory + "/catalog.sqlite")
        let status = try catalog.session(id: "stop-while-opening")?.status
        // Stopped at once it may hold a few frames (completed) or none (discarded, no row).
        #expect(status == nil || status == .completed, "session status \(String(describing: status))")
    }
}

import Foundation
import NIOPosix
import RecordServerCore
import Testing
@testable import CaptureAgentCore

@Suite("End to end with a real record-server over TLS", .serialized)
struct EndToEndTests {
    @Test(.timeLimit(.minutes(2)))
    func twoTestCamerasAndTestAudioForTenSecondsGiveOneCompleteMP4() async throws {
        let fixture = try EndToEndFixture()
        let server = try RecordServer(configuration: fixture.serverConfiguration, logger: EndToEndFixture.logger)
        let running = try await server.start()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let agent = try AgentRuntime(settings: try fixture.agentSettings(port: running.ingestPort, seconds: 10, sessionID: "e2e-1"),
                                     logger: EndToEndFixture.logger, group: group)
        try await agent.run()
        await running.stop()
        try await group.shutdownGracefully()

        let files = fixture.recordings()
        #expect(files.count == 1, "\(files)")
        let file = try #require(files.first)
        try checkRecording(file, expectedFrames: 295...305)
    }
}

/// The record-server executable next to the test bundle (built by `swift build --build-tests`).
let recordServerBinary: String? = {
    let candidates = [
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../.build/debug/record-server").standardized.path,
        Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("record-server").path,
    ]
    return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
}()

/// A free loopback TCP port (bound and released; the server binds it again at once).
func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    addr.sin_port = 0
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
    _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
    return Int(UInt16(bigEndian: addr.sin_port))
}

extension EndToEndTests {
    /// The server process is killed (SIGKILL, no chance to finalize) three times in the
    /// middle of one recording and started again each time on the same data directory: the
    /// agent reconnects, resumes from the server's durable point and resends the rest.
    @Test(.timeLimit(.minutes(3)), .enabled(if: recordServerBinary != nil, "needs .build/debug/record-server (swift build --build-tests)"))
    func serverKilledThreeTimesMidRecordingStillEveryFrameExactlyOnce() async throws {
        let fixture = try EndToEndFixture()
        let port = try freePort()
        var config = fixture.serverConfiguration
        config.ingest = .init(host: "127.0.0.1", port: port)
        let configPath = fixture.directory.path + "/server.json"
        try JSONEncoder().encode(config).write(to: URL(fileURLWithPath: configPath))

        func launch() throws -> Process {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: recordServerBinary!)
            p.arguments = ["--config", configPath, "--log-level", "warning"]
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle(forWritingAtPath: "/dev/null")
            try p.run()
            return p
        }
        var server = try launch()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let agent = try AgentRuntime(settings: try fixture.agentSettings(port: port, seconds: 15, sessionID: "e2e-kill"),
                                     logger: EndToEndFixture.logger, group: group)
        let recording = Task { try await agent.run() }
        var kills = 0
        for _ in 0..<3 {
            try await Task.sleep(for: .seconds(3))
            kill(server.processIdentifier, SIGKILL)
            server.waitUntilExit()
            if server.terminationReason == .uncaughtSignal { kills += 1 }
            try await Task.sleep(for: .seconds(1))
            server = try launch()
        }
        try await recording.value
        server.terminate()
        server.waitUntilExit()
        try await group.shutdownGracefully()
        #expect(kills == 3, "the server died of SIGKILL \(kills) times")

        // One session, resumed after every kill and finalized once.
        let catalog = try Catalog(path: fixture.dataDirectory + "/catalog.sqlite")
        let record = try #require(try catalog.session(id: "e2e-kill"))
        #expect(record.status == .completed, "\(record.status) \(record.error ?? "")")

        let files = fixture.recordings()
        #expect(files.count == 1, "\(files)")
        let file = try #require(files.first)
        try checkRecording(file, expectedFrames: 445...455)
    }
}

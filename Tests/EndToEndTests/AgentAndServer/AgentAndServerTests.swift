import Foundation
import NIOCore
import NIOPosix
import RecordServerCore
import Shared
import Testing
import TestSupport
@testable import CaptureAgentCore

@Suite("End to end with a real record-server over TLS", .serialized)
struct AgentAndServerTests {
    @Test(.timeLimit(.minutes(2)))
    func twoTestCamerasAndTestAudioForTenSecondsGiveOneCompleteMP4() async throws {
        let fixture = try EndToEndFixture()
        let running = try await fixture.startServer()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let agent = try AgentRuntime(settings: try fixture.agentSettings(port: running.ingestPort, seconds: 10, sessionID: "e2e-1"),
                                     logger: EndToEndFixture.logger, group: group)
        try await recordThenStop(running, group) { try await agent.run() }

        let files = fixture.recordings()
        #expect(files.count == 1, "\(files)")
        let file = try #require(files.first)
        try checkRecording(file, expectedFrames: 295...305, dataDirectory: fixture.dataDirectory)
    }
}

extension AgentAndServerTests {
    /// Records `seconds` from the fixture's agent through a record-server subprocess that is
    /// stopped with `signal` `restarts` times (3 s apart) and started again each time on the
    /// same data directory. Returns how the server processes ended and the finished file.
    private func recordThroughServerRestarts(_ fixture: EndToEndFixture, sessionID: Identifier, seconds: Double,
                                             signal: Int32, restarts: Int, catalog: String = "sqlite")
        async throws -> (endings: [(Process.TerminationReason, Int32)], file: String?) {
        let port = try LoopbackPort.free()
        var config = fixture.serverConfiguration
        config.ingest = .init(host: "127.0.0.1", port: port)
        config.catalog = catalog
        let configPath = fixture.directory.path + "/server.json"
        try JSONEncoder().encode(config).write(to: URL(fileURLWithPath: configPath))

        var launches = 0
        func launch() throws -> ChildProcess {
            launches += 1
            return try ChildProcess(recordServerBinary!, ["--config", configPath, "--log-level", "warning"],
                                    logPath: fixture.directory.path + "/server-\(launches).log")
        }
        var server = try launch()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let agent = try AgentRuntime(settings: try fixture.agentSettings(port: port, seconds: seconds, sessionID: sessionID),
                                     logger: EndToEndFixture.logger, group: group)
        let recording = Task { try await agent.run() }
        var endings: [(Process.TerminationReason, Int32)] = []
        for _ in 0..<restarts {
            try await Task.sleep(for: .seconds(3))
            server.signalAndWait(signal)
            endings.append((server.terminationReason, server.terminationStatus))
            if server.terminationReason == .uncaughtSignal, server.terminationStatus != signal {
                // A crash, not the signal sent: what the server said last, for the report.
                print("record-server died of signal \(server.terminationStatus); its log ends:\n"
                      + server.log.split(separator: "\n").suffix(60).joined(separator: "\n"))
            }
            try await Task.sleep(for: .seconds(1))
            server = try launch()
        }
        try await recording.value
        server.terminate()
        try await group.shutdownGracefully()
        let files = fixture.recordings()
        #expect(files.count == 1, "\(files)")
        return (endings, files.first)
    }

    /// The server process is killed (SIGKILL, no chance to finalize) three times in the
    /// middle of one recording and started again each time on the same data directory: the
    /// agent reconnects, resumes from the server's durable point and resends the rest. With
    /// the catalog in SQLite and in PostgreSQL (read back with psql).
    @Test(.timeLimit(.minutes(3)), .enabled(if: recordServerBinary != nil, "needs .build/debug/record-server (swift build --build-tests)"),
          arguments: ["sqlite", "postgresql"])
    func serverKilledThreeTimesMidRecordingStillEveryFrameExactlyOnce(_ backend: String) async throws {
        let fixture = try EndToEndFixture()
        let postgres = backend == "postgresql" ? try await TestPostgres.shared() : nil
        let catalogURL = try await postgres?.createDatabase() ?? "sqlite"
        let run = try await recordThroughServerRestarts(fixture, sessionID: "e2e-kill", seconds: 15, signal: SIGKILL, restarts: 3,
                                                        catalog: catalogURL)
        let kills = run.endings.filter { $0.0 == .uncaughtSignal && $0.1 == SIGKILL }.count
        #expect(kills == 3, "the server died of SIGKILL \(kills) times: \(run.endings)")

        // One session, resumed after every kill and finalized once.
        let file = try #require(run.file)
        if let postgres {
            let database = TestPostgres.database(of: catalogURL)
            #expect(try await postgres.psql(#"SELECT "status" FROM sessions WHERE "id" = 'e2e-kill'"#, database: database) == "completed")
            #expect(try await postgres.psql(#"SELECT "path" || ' ' || "status" FROM recordings WHERE "sessionID" = 'e2e-kill'"#, database: database)
                    == file + " completed")
            #expect(!FileManager.default.fileExists(atPath: fixture.dataDirectory + "/catalog.sqlite"), "no SQLite catalog beside PostgreSQL")
        } else {
            let catalog = try Catalog(path: fixture.dataDirectory + "/catalog.sqlite")
            let record = try #require(try catalog.session(id: "e2e-kill"))
            #expect(record.status == .completed, "\(record.status) \(record.error ?? "")")
        }
        try checkRecording(file, expectedFrames: 445...455, dataDirectory: fixture.dataDirectory)
    }

    /// A graceful restart (SIGTERM, as `systemctl restart record-server` sends) in the middle
    /// of a recording suspends the session instead of finalizing it. The server exits 0, the
    /// agent resumes after the restart, and the one file holds every frame exactly once.
    @Test(.timeLimit(.minutes(3)), .enabled(if: recordServerBinary != nil, "needs .build/debug/record-server (swift build --build-tests)"))
    func gracefulServerRestartsMidRecordingResumeIntoTheSameFile() async throws {
        let fixture = try EndToEndFixture()
        let run = try await recordThroughServerRestarts(fixture, sessionID: "e2e-restart", seconds: 10, signal: SIGTERM, restarts: 2)
        #expect(run.endings.count == 2 && run.endings.allSatisfy { $0.0 == .exit && $0.1 == 0 }, "\(run.endings)")

        let catalog = try Catalog(path: fixture.dataDirectory + "/catalog.sqlite")
        let record = try #require(try catalog.session(id: "e2e-restart"))
        #expect(record.status == .completed, "\(record.status) \(record.error ?? "")")
        try checkRecording(try #require(run.file), expectedFrames: 295...305, dataDirectory: fixture.dataDirectory)
    }
}

extension AgentAndServerTests {
    /// A server process out of file descriptors (idle connections up to `ulimit -n`) cannot
    /// accept; that must never end its accept loop. Once the idle connections go, an agent
    /// that kept retrying gets in and records a complete file.
    @Test(.timeLimit(.minutes(3)), .enabled(if: recordServerBinary != nil, "needs .build/debug/record-server (swift build --build-tests)"))
    func aServerOutOfFileDescriptorsAcceptsAgainWhenTheyFreeUp() async throws {
        let fixture = try EndToEndFixture()
        let port = try LoopbackPort.free()
        var config = fixture.serverConfiguration
        config.ingest = .init(host: "127.0.0.1", port: port)
        let configPath = fixture.directory.path + "/server.json"
        try JSONEncoder().encode(config).write(to: URL(fileURLWithPath: configPath))
        let limit = 128
        let server = try ChildProcess("/bin/sh", ["-c", "ulimit -n \(limit) && exec \"$0\" --config \"$1\" --log-level warning",
                                                  recordServerBinary!, configPath])
        defer { server.terminate() }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)

        // Wait until it listens, then hold idle TCP connections (no TLS ClientHello) until the
        // server's descriptor table is full.
        var idle: [any Channel] = []
        for _ in 0..<100 {
            // Refused while the server is still starting: try again until it listens.
            if let c = try? await ClientBootstrap(group: group).connect(host: "127.0.0.1", port: port).get() { idle.append(c); break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(idle.count == 1, "record-server did not start listening")
        // A server that exited has no /proc entry: 0 descriptors, which the expectation below reports.
        func openDescriptors() -> Int { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(server.pid)/fd").count) ?? 0 }
        while idle.count < limit + 20 {
            idle.append(try await ClientBootstrap(group: group).connect(host: "127.0.0.1", port: port).get())
        }
        var full = false
        for _ in 0..<100 where !full {
            full = openDescriptors() >= limit
            if !full { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(full, "the server's descriptors never reached \(limit): \(openDescriptors())")

        // The agent starts while the server cannot accept; it retries with backoff.
        let agent = try AgentRuntime(settings: try fixture.agentSettings(port: port, seconds: 5, sessionID: "e2e-emfile"),
                                     logger: EndToEndFixture.logger, group: group)
        let recording = Task { try await agent.run() }
        try await Task.sleep(for: .seconds(2))
        // A connection the server already dropped is as closed as the test needs it.
        for channel in idle { try? await channel.close() }
        try await recording.value
        #expect(server.isRunning, "record-server exited (status \(server.isRunning ? 0 : server.terminationStatus))")
        server.terminate()
        try await group.shutdownGracefully()

        let catalog = try Catalog(path: fixture.dataDirectory + "/catalog.sqlite")
        let record = try #require(try catalog.session(id: "e2e-emfile"))
        #expect(record.status == .completed, "\(record.status) \(record.error ?? "")")
        let files = fixture.recordings()
        #expect(files.count == 1, "\(files)")
        try checkRecording(try #require(files.first), expectedFrames: 145...155, dataDirectory: fixture.dataDirectory)
    }
}

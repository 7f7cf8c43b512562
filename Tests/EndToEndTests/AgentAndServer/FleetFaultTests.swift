import Foundation
import NIOPosix
import RecordServerCore
import RecordingTLS
import Shared
import Testing
import TestSupport
@testable import CaptureAgentCore

/// End-to-end fault tests from issue 7: several agents at once, and an agent killed mid-session.
@Suite("Fleet and fault tests with a real record-server over TLS", .serialized)
struct FleetFaultTests {
    /// Two small 15 fps test cameras and test audio, as `agentID`, recording `sessionID` for `seconds`.
    private func settings(_ fixture: EndToEndFixture, agentID: String, port: Int, seconds: Double, sessionID: Identifier) throws -> AgentSettings {
        try fixture.server.agentSettings(agentID: agentID, port: port,
                                         sources: ["front=test:320x240@15", "back=test:320x240@15", "tone=test:audio"],
                                         record: true, sessionID: sessionID, duration: seconds)
    }

    /// Decodes `path` and applies the shared contiguous-frames check. Returns N per video track.
    @discardableResult
    private func checkFrames(_ path: String, expectedFrames: ClosedRange<Int>, _ fixture: EndToEndFixture) throws -> [Int] {
        checkContiguousFrames(try DecodedRecording(path: path), expected: expectedFrames,
                              drops: try reportedDrops(in: path, dataDirectory: fixture.dataDirectory), context: path)
    }

    @Test(.timeLimit(.minutes(3)))
    func threeAgentsRecordingAtOnceEachGiveOneCompleteDistinctMP4() async throws {
        let fixture = try EndToEndFixture()
        let running = try await fixture.startServer()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let agents = ["agent-a", "agent-b", "agent-c"]
        var runtimes: [AgentRuntime] = []
        for id in agents {
            runtimes.append(try AgentRuntime(settings: try settings(fixture, agentID: id, port: running.ingestPort, seconds: 4,
                                                                  sessionID: try Identifier(validating: "fleet-\(id)")),
                                             logger: EndToEndFixture.logger, group: group))
        }
        try await recordThenStop(running, group) {
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                for runtime in runtimes { tasks.addTask { try await runtime.run() } }
                try await tasks.waitForAll()
            }
        }

        let files = fixture.recordings()
        #expect(files.count == 3, "\(files)")
        #expect(Set(files).count == files.count)
        // Each session is its own file, with its own status.
        let catalog = try Catalog(path: fixture.dataDirectory + "/catalog.sqlite")
        var directories: [String] = []
        for id in agents {
            let record = try #require(try catalog.session(id: "fleet-\(id)"), "session of \(id) in the catalog")
            #expect(record.agentID == id)
            #expect(record.status == .completed, "\(id): \(record.status) \(record.error ?? "")")
            directories.append(record.directory)
            #expect(files.filter { $0.contains("fleet-\(id)") }.count == 1, "one file for fleet-\(id) in \(files)")
        }
        #expect(Set(directories).count == 3, "\(directories)")
        for file in files {
            // About 4 s at 15 fps: 60 frames per camera, with generous bounds.
            try checkFrames(file, expectedFrames: 40...80, fixture)
        }
    }

    @Test(.timeLimit(.minutes(3)), .enabled(if: captureAgentBinary != nil, "needs .build/debug/capture-agent (swift build --build-tests)"))
    func agentKilledMidSessionIsFinalizedAsInterruptedWithContiguousFrames() async throws {
        let fixture = try EndToEndFixture()
        var config = fixture.serverConfiguration
        config.resumeWindowSeconds = 2
        let running = try await fixture.startServer(config)
        let (cert, key) = try fixture.server.writeAgentCertificate("agent-k")

        // The agent logs every acknowledgement at trace level; the log tells the test what the
        // server had promised was durable when the agent died.
        let logPath = fixture.directory.path + "/agent.log"
        let agent = try ChildProcess(captureAgentBinary!, [
            "run", "--server", "127.0.0.1:\(running.ingestPort)", "--ca", fixture.caPath, "--cert", cert, "--key", key,
            "--agent-id", "agent-k", "--source", "front=test:320x240@15", "--source", "back=test:320x240@15",
            "--source", "tone=test:audio", "--preset", "ultrafast", "--threads", "1",
            "--record", "--session-id", "crash-1", "--duration", "60", "--log-level", "trace",
        ], logPath: logPath)
        defer { agent.kill9() }

        let catalog = try Catalog(path: fixture.dataDirectory + "/catalog.sqlite")
        // Wait (bounded) for the session to exist, then let it record a few seconds of media.
        var started = false
        for _ in 0..<300 {
            if try catalog.session(id: "crash-1") != nil { started = true; break }
            try await Task.sleep(for: .milliseconds(100))
        }
        guard started else {
            await running.stop()
            Issue.record("the agent's session never appeared in the catalog")
            return
        }
        try await Task.sleep(for: .seconds(4))
        #expect(agent.isRunning, "the agent is still recording when killed")
        agent.kill9()

        // The server notices, waits the 2 s resume window, and finalizes as interrupted.
        var record = try catalog.session(id: "crash-1")
        for _ in 0..<600 where record?.status == .recording {
            try await Task.sleep(for: .milliseconds(100))
            record = try catalog.session(id: "crash-1")
        }
        await running.stop()
        let final = try #require(record)
        #expect(final.status == .interrupted, "status \(final.status) \(final.error ?? "")")
        #expect(final.agentID == "agent-k")

        let files = fixture.recordings()
        #expect(files.count == 1, "\(files)")
        let file = try #require(files.first)
        // Whatever was durable before the kill: contiguous from frame 0, no duplicates, at least one frame.
        let counts = try checkFrames(file, expectedFrames: 1...2000, fixture)
        #expect(counts.count == 2 && counts.allSatisfy { $0 > 0 }, "\(counts)")
        // Complete up to the last acknowledged sample: every sample with a sequence number up to
        // the agent's last ack is in the file (sequence numbers count samples of all tracks from 1).
        let log = try String(contentsOfFile: logPath, encoding: .utf8)
        let lastAck = try #require(Self.lastAcknowledgedSequence(in: log, session: "crash-1"),
                                   "the agent logged at least one acknowledgement before it was killed")
        let packets = try countPackets(file)
        #expect(packets >= lastAck, "the file holds \(packets) samples; the server had acknowledged \(lastAck)")
        #expect(lastAck > 0)
    }

    /// The highest "acknowledged through sequence N" the agent logged for `session`.
    static func lastAcknowledgedSequence(in log: String, session: String) -> Int? {
        let marker = "session \(session) acknowledged through sequence "
        return log.split(whereSeparator: \.isNewline).compactMap { line -> Int? in
            guard let range = line.range(of: marker) else { return nil }
            return Int(line[range.upperBound...].prefix { $0.isNumber })
        }.max()
    }
}

import Foundation
import GRDB
import NIOPosix
@testable import RecordServerCore
import Shared
import TestSupport
import Testing

/// Issue 13: a seeded, randomized run of what operators and the world do to a recording
/// system (starts, duplicate starts, stops, cancels, deletes, restarts with changed settings,
/// `kill -9`, a second server on the same data directory, network cuts, a full disk,
/// `recordctl recover` on a live file) against the real record-server and capture-agent
/// executables, then the invariants: every sample acknowledged to an agent is in its files
/// exactly once and in order (frame counters read back with ffmpeg), every file plays, and
/// every catalog row says what its file holds (ffprobe durations and packet counts).
///
/// `CHAOS_SEED` replays a run, `CHAOS_STEPS` sets its length (default 50);
/// `scripts/operator-chaos-soak.sh` runs long ones.
@Suite("Operator chaos", .serialized)
struct OperatorChaosTests {
    @Test(.timeLimit(.minutes(30)))
    func aSeededRunOfOperatorActionsAndFaultsKeepsEveryAcknowledgedSample() async throws {
        let environment = ProcessInfo.processInfo.environment
        let seed = environment["CHAOS_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1 ... 999_999)
        let steps = environment["CHAOS_STEPS"].flatMap(Int.init) ?? 50
        print("operator chaos: seed \(seed), \(steps) steps (replay: CHAOS_SEED=\(seed) CHAOS_STEPS=\(steps) swift test --filter OperatorChaos)")
        let run = try await ChaosRun(seed: seed)
        do {
            for step in 1 ... steps { try await run.step(step) }
            try await run.finish()
        } catch {
            await run.abandon()
            Issue.record("seed \(seed): \(error)\nsteps:\n\(run.journal.joined(separator: "\n"))")
            run.printLogLines(aboutSessionsNamedIn: ["\(error)"])
            return
        }
        let report = try run.checkInvariants()
        print("operator chaos: seed \(seed): \(report)")
        for problem in report.problems {
            Issue.record("seed \(seed): \(problem)\nsteps:\n\(run.journal.joined(separator: "\n"))")
        }
        run.printLogLines(aboutSessionsNamedIn: report.problems)
        #expect(report.sessionsChecked > 0 && report.framesChecked > 0, "the run recorded something")
    }
}

/// One chaos run: a server behind a proxy that can cut the network, two agents, the
/// operator's recordctl, and a seeded choice of actions.
final class ChaosRun: @unchecked Sendable {
    enum Action: String, CaseIterable {
        case record, start, duplicateStart, stop, cancel, delete, restartWithNewSegments, kill9, secondServer
        case networkCut, fullDisk, recoverLiveFile
    }

    private var random: SplitMix64
    let fixture: ServerFixture
    private let mount: TinyFilesystem?
    let server: ServerProcess
    private let proxy: FaultInjectingProxy
    private var agents: [AgentProcess] = []
    /// The agents, whose logs say what the server acknowledged.
    var agentLogs: [AgentProcess] { agents }
    let console: OperatorConsole
    /// What was done, step by step, printed with any failure.
    private(set) var journal: [String] = []
    private(set) var counts: [Action: Int] = [:]
    /// Recordings the operator deleted: their files and rows must be gone.
    private(set) var deletedRecordings: [(id: String, session: String, path: String)] = []
    private var secondServers = 0

    init(seed: UInt64) async throws {
        random = SplitMix64(seed: seed)
        fixture = try ServerFixture(resumeWindowSeconds: 15)
        // The data directory on a small tmpfs where mounting is allowed (root, CI): the full
        // disk is real. Elsewhere that action is left out, and the run says so.
        mount = TinyFilesystem.canMount ? try TinyFilesystem(path: fixture.configuration.dataDirectory, kilobytes: 96 * 1024) : nil
        try (ServerFixture.adminToken + "\n").write(toFile: fixture.directory + "/admin.token", atomically: true, encoding: .utf8)
        server = try ServerProcess(fixture: fixture, adminPort: try LoopbackPort.free())
        try server.start()
        try await server.waitUntilListening()
        proxy = try await FaultInjectingProxy(group: MultiThreadedEventLoopGroup.singleton, targetPort: server.port)
        console = OperatorConsole(adminURL: "http://127.0.0.1:\(server.configuration.admin.port)", tokenFile: fixture.directory + "/admin.token")
        for id in ["cam-a", "cam-b"] { agents.append(try AgentProcess(id: id, serverPort: proxy.port, fixture: fixture)) }
        _ = try await eventually("both agents to connect") { console.connectedAgents().flatMap { $0.count == 2 ? true : nil } }
        if mount == nil { note("no permission to mount a tmpfs: the full-disk action is left out") }
    }

    private func note(_ text: String) { journal.append(text) }

    /// Prints what the server and the agents logged about the sessions these texts name, for
    /// the diagnosis of a failed run (the journal says what was done, the logs what followed).
    func printLogLines(aboutSessionsNamedIn texts: [String]) {
        let sessionID = try! NSRegularExpression(pattern: "cam-[ab]-[0-9]{8}T[0-9]{6}Z-[0-9a-f]+")
        let named = Set(texts.flatMap { text in
            sessionID.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap { Range($0.range, in: text).map { String(text[$0]) } }
        })
        let lines = (server.log + agents.map(\.log).joined()).split(whereSeparator: \.isNewline)
        for id in named.sorted() {
            let about = lines.filter { $0.contains(id) && !$0.contains("acknowledged through") }
            print("operator chaos: log lines about \(id):\n" + about.suffix(60).joined(separator: "\n"))
        }
    }

    // MARK: Steps

    private func pick<T>(_ choices: [T]) -> T { choices[Int(random.next() % UInt64(choices.count))] }
    private func seconds(_ range: ClosedRange<Double>) -> Double {
        range.lowerBound + Double(random.next() % 1000) / 1000 * (range.upperBound - range.lowerBound)
    }

    /// The live sessions by agent, waiting out a server that is (re)starting.
    private func liveByAgent() async throws -> [String: [String: Any]] {
        let live = try await eventually("the admin API to answer") { console.liveSessions() }
        var result: [String: [String: Any]] = [:]
        // A session that is finishing this instant is listed with its final state: not live.
        for s in live where ["recording", "detached", "suspended"].contains(s["state"] as? String ?? "") {
            if let agent = s["agent_id"] as? String { result[agent] = s }
        }
        return result
    }

    func step(_ number: Int) async throws {
        let live = try await liveByAgent()
        let idle = agents.map(\.id).filter { live[$0] == nil }
        let recording = agents.map(\.id).filter { live[$0] != nil }
        var weighted: [(Action, Int)] = [(.record, 6), (.restartWithNewSegments, 2), (.kill9, 2), (.secondServer, 1), (.networkCut, 2)]
        if !idle.isEmpty { weighted.append((.start, 6)) }
        if !recording.isEmpty {
            weighted += [(.duplicateStart, 2), (.stop, 3), (.cancel, 1), (.recoverLiveFile, 1)]
            if mount != nil { weighted.append((.fullDisk, 1)) }
        }
        let liveIDs = Set(live.values.compactMap { $0["id"] as? String })
        if deletable(besides: liveIDs) != nil { weighted.append((.delete, 1)) }
        var ticket = Int(random.next() % UInt64(weighted.reduce(0) { $0 + $1.1 }))
        let action = weighted.first { ticket -= $0.1; return ticket < 0 }!.0
        counts[action, default: 0] += 1
        let started = ContinuousClock.now
        let detail = try await perform(action, idle: idle, recording: recording, live: live, liveIDs: liveIDs)
        note("\(number). \(action.rawValue) \(detail) (\(ContinuousClock.now - started))")
    }

    private func perform(_ action: Action, idle: [String], recording: [String], live: [String: [String: Any]],
                         liveIDs: Set<String>) async throws -> String {
        switch action {
        case .record:
            let s = seconds(0.5 ... 3)
            try await Task.sleep(for: .milliseconds(Int(s * 1000)))
            return String(format: "%.1f s", s)

        case .start:
            let agent = pick(idle)
            try await waitConnected(agent)
            let out = try console.run(["start", "--agent", agent, "--wait", "20", "--json"])
            // Output that is not JSON fails the step below, with what recordctl printed.
            guard out.status == 0, let json = try? JSONSerialization.jsonObject(with: out.stdout) as? [String: Any],
                  let id = json["session_id"] as? String else {
                throw ChaosFailure("start on \(agent) failed: exit \(out.status) \(out.stdoutText) \(out.stderr)")
            }
            return "\(agent) → \(id)"

        case .duplicateStart:
            let agent = pick(recording)
            let running = live[agent]?["id"] as? String ?? "?"
            let out = try console.run(["start", "--agent", agent, "--wait", "5"])
            guard out.status == 1, out.stderr.contains("already recording session \(running)") else {
                throw ChaosFailure("a second start on \(agent) (recording \(running)) answered exit \(out.status): \(out.stdoutText) \(out.stderr)")
            }
            let still = try await liveByAgent()[agent]?["id"] as? String
            guard still == running else { throw ChaosFailure("a second start disturbed \(running): the agent now has \(still ?? "nothing")") }
            return "\(agent) refused, \(running) goes on"

        case .stop, .cancel:
            let agent = pick(recording)
            let id = live[agent]?["id"] as? String ?? "?"
            let out = try console.run([action == .stop ? "stop" : "cancel", id])
            // The session may have ended on its own meanwhile (a full disk): then 404 is right.
            guard out.status == 0 || out.stderr.contains("no live session") else {
                throw ChaosFailure("\(action) \(id): exit \(out.status) \(out.stderr)")
            }
            _ = try await eventually("\(id) to end", seconds: 60) {
                console.liveSessions().flatMap { sessions in sessions.contains { $0["id"] as? String == id } ? nil : true }
            }
            return id

        case .delete:
            let (id, session, path) = deletable(besides: liveIDs)!
            let out = try console.run(["delete", id])
            guard out.status == 0 else { throw ChaosFailure("delete \(id): exit \(out.status) \(out.stderr)") }
            guard !FileManager.default.fileExists(atPath: path) else { throw ChaosFailure("delete \(id) left \(path)") }
            deletedRecordings.append((id, session, path))
            return id

        case .restartWithNewSegments:
            let segment: Double? = pick([nil, 2, 3, 5])
            server.terminate()
            try server.reconfigure { $0.segment.maxSeconds = segment }
            try server.start()
            try await server.waitUntilListening()
            return "SIGTERM, segment.maxSeconds = \(segment.map { "\($0)" } ?? "none")"

        case .kill9:
            server.kill9()
            try server.start()
            try await server.waitUntilListening()
            return "pid replaced"

        case .secondServer:
            secondServers += 1
            let second = try ServerProcess(fixture: fixture, name: "second-\(secondServers)", adminPort: try LoopbackPort.free())
            try second.start()
            let status = try await second.waitForExit()
            let log = second.log
            guard status == 64, log.contains(fixture.configuration.dataDirectory), log.contains("pid \(server.pid)") else {
                throw ChaosFailure("a second server on the data directory: exit \(status), log: \(log.suffix(600))")
            }
            guard server.isRunning else { throw ChaosFailure("the first server died when a second one started") }
            return "refused with exit 64, naming pid \(server.pid)"

        case .networkCut:
            let s = seconds(0.5 ... 4)
            proxy.cut()
            try await Task.sleep(for: .milliseconds(Int(s * 1000)))
            proxy.restore()
            return String(format: "%.1f s", s)

        case .fullDisk:
            let filled = TinyFilesystem.fill(ballast)
            try await Task.sleep(for: .milliseconds(Int(seconds(0.5 ... 2) * 1000)))
            try FileManager.default.removeItem(atPath: ballast)
            return "\(filled / 1024) KiB of ballast, then freed"

        case .recoverLiveFile:
            let agent = pick(recording)
            guard let path = live[agent]?["path"] as? String, FileManager.default.fileExists(atPath: path) else { return "no file yet" }
            let before = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? -1
            let out = try console.local(["recover", path])
            guard out.status == 1, out.stderr.contains("belongs to a running record-server") else {
                throw ChaosFailure("recover on the live \(path): exit \(out.status) \(out.stdoutText) \(out.stderr)")
            }
            let after = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? -1
            guard after >= before else { throw ChaosFailure("recover refused but \(path) shrank from \(before) to \(after) B") }
            return "refused on \(path.split(separator: "/").last ?? "")"
        }
    }

    private func waitConnected(_ agent: String) async throws {
        _ = try await eventually("\(agent) to be connected") { console.connectedAgents()?.contains(agent) == true ? true : nil }
    }

    /// A finished recording not yet deleted, of a session that is over.
    private func deletable(besides live: Set<String>) -> (String, String, String)? {
        guard let rows = console.recordings() else { return nil }
        for row in rows {
            guard let id = row["id"] as? String, let session = row["session_id"] as? String, let path = row["path"] as? String,
                  let status = row["status"] as? String, status != "recording", !live.contains(session),
                  !deletedRecordings.contains(where: { $0.id == id }) else { continue }
            return (id, session, path)
        }
        return nil
    }

    private var ballast: String { fixture.configuration.dataDirectory + "/ballast.bin" }

    /// Writes zeros into the data directory's filesystem until it is full; returns the bytes.
    // MARK: End

    /// Back to normal, every session stopped and finished, then everything shut down.
    func finish() async throws {
        proxy.restore()
        if FileManager.default.fileExists(atPath: ballast) { try FileManager.default.removeItem(atPath: ballast) }
        for agent in agents.map(\.id) { try await waitConnected(agent) }
        for (_, session) in try await liveByAgent() {
            guard let id = session["id"] as? String else { continue }
            _ = try console.run(["stop", id])
        }
        _ = try await eventually("every session to finish", seconds: 90) { console.liveSessions().flatMap { $0.isEmpty ? true : nil } }
        for agent in agents { await agent.stop() }
        server.terminate()
        await proxy.close()
        note("finished: every session stopped, agents and server shut down")
    }

    /// After a failure: stop the processes so nothing outlives the test.
    func abandon() async {
        for agent in agents { await agent.stop() }
        server.terminate()
        await proxy.close()
        mount?.unmount()
    }

    deinit { mount?.unmount() }
}

struct ChaosFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RecordServerCore
import Testing
import TestSupport

/// recordctl against a real record-server (over its real admin listener) and a real capture agent.
@Suite("recordctl against a real record-server and agent", .serialized)
struct RemoteControlTests {
    /// The polling calls below wait up to this long per request (recordctl's default is 10 s):
    /// the full test suite runs servers, encoding agents and fuzzers side by side on two
    /// cores, where a request that has to wait for a session finalizing can take longer.
    /// This is a test about what the answers say, not how fast they come.
    static let pollTimeout = ["--timeout", "30"]

    /// Live sessions of the server, from `recordctl sessions --json`.
    static func sessions(_ env: [String: String]) throws -> [[String: Any]] {
        let result = try recordctl(["sessions", "--json"] + pollTimeout, environment: env)
        try #require(result.status == 0, "\(result.output)")
        return try result.json()["sessions"] as? [[String: Any]] ?? []
    }

    static func recordings(_ env: [String: String], _ extra: [String] = []) throws -> [[String: Any]] {
        let result = try recordctl(["recordings", "--json"] + pollTimeout + extra, environment: env)
        try #require(result.status == 0, "\(result.output)")
        return try result.json()["recordings"] as? [[String: Any]] ?? []
    }

    @Test(.timeLimit(.minutes(3)))
    func listStartStopCancelFilterDeleteWithJSON() async throws {
        let fixture = try ServerWithAgent()
        try await fixture.start()
        try await fixture.startAgent(id: "cam-1")
        defer { Task { await fixture.stop() } }
        let env = fixture.environment

        // agents: the connected agent, as a table and as JSON.
        let agents = try await fixture.connectedAgents()
        #expect(agents.map { $0["id"] as? String } == ["cam-1"])
        #expect(agents.first?["session_id"] is NSNull)
        let address = agents.first?["address"] as? String ?? ""
        #expect(address.hasPrefix("127.0.0.1:") && !address.contains("IPv4"), "an address as an operator writes it: \(address)")
        let table = try recordctl(["agents"], environment: env)
        #expect(table.status == 0)
        #expect(table.stdout.contains("ID") && table.stdout.contains("ADDRESS") && table.stdout.contains("cam-1"), "\(table.stdout)")

        // events (issue 17): a script following the server sees the session start and end.
        let eventsLog = fixture.server.directory + "/recordctl-events.log"
        let binary = try #require(recordctlBinary)
        let watcher = try ChildProcess(binary, ["events", "--count", "3", "--json", "--timeout", "1"], environment: env, logPath: eventsLog)
        _ = try await eventually("recordctl events to subscribe") { watcher.log.contains("following the events of") ? true : nil }
        // A quiet stream outlives --timeout, which bounds the connection, not the wait for events
        // (it used to end the stream after --timeout seconds without an event: seen in CI).
        try await Task.sleep(for: .seconds(2))

        // start: a session appears.
        let started = try recordctl(["start", "--agent", "cam-1", "--label", "take=1", "--label", "room=a", "--wait", "15", "--json"],
                                    environment: env)
        #expect(started.status == 0, "\(started.output)")
        let startJSON = try started.json()
        #expect(startJSON["status"] as? String == "started", "201: the agent opened the session within the server's wait")
        #expect(startJSON["agent_id"] as? String == "cam-1")
        let sessionID = try #require(startJSON["session_id"] as? String)
        let live = try await eventually("the session to have samples") { () -> [String: Any]? in
            let s = try Self.sessions(env).first { $0["id"] as? String == sessionID }
            let samples = (s?["tracks"] as? [[String: Any]] ?? []).map { ($0["samples"] as? Int) ?? 0 }
            return samples.count == 2 && samples.allSatisfy({ $0 >= 30 }) ? s : nil
        }
        #expect(live["agent_id"] as? String == "cam-1")
        #expect(live["labels"] as? [String: String] == ["take": "1", "room": "a"])
        #expect(live["state"] as? String == "recording")
        let sessionsTable = try recordctl(["sessions"], environment: env)
        #expect(sessionsTable.stdout.contains(sessionID) && sessionsTable.stdout.contains("room=a,take=1"), "\(sessionsTable.stdout)")
        let top = try recordctl(["top", "--once"], environment: env)
        #expect(top.status == 0, "\(top.output)")
        for column in ["FPS", "BITRATE", "LAG", "DROPPED", "ACK", sessionID, "front", "tone", "h264", "opus"] {
            #expect(top.stdout.contains(column), "top lacks \(column): \(top.stdout)")
        }
        #expect(!top.stdout.contains("\u{1B}["), "no ANSI escapes when stdout is not a terminal")

        // The file being written is listed as `recording` (its row comes with the first durable
        // fragment, which may follow the 30th sample); deleting it is refused (409) while live.
        let writingID = try await eventually("the file being written to be listed") { () -> String? in
            try Self.recordings(env, ["--status", "recording"]).first { $0["session_id"] as? String == sessionID }?["id"] as? String
        }
        let refusedDelete = try recordctl(["delete", writingID], environment: env)
        #expect(refusedDelete.status == 1, "\(refusedDelete.output)")
        #expect(refusedDelete.stderr.hasPrefix("recordctl: ") && refusedDelete.stderr.count > 12, "\(refusedDelete.stderr)")

        // A copy of the live (fragmented) file is what a crash leaves: verify says recover; recover fixes it.
        let sessionPath = try #require(live["path"] as? String)
        let liveFile = sessionPath.hasSuffix(".mp4") ? sessionPath
            : sessionPath + "/" + (try #require(try FileManager.default.contentsOfDirectory(atPath: sessionPath).filter { $0.hasSuffix(".mp4") }.sorted().first))
        let crashed = fixture.directory + "/crashed.mp4"
        try FileManager.default.copyItem(atPath: liveFile, toPath: crashed)
        let verifyCrashed = try recordctl(["verify", crashed])
        #expect(verifyCrashed.status == 1)
        #expect(verifyCrashed.stdout.contains("unfinished recording") && verifyCrashed.stdout.contains("recordctl recover"), "\(verifyCrashed.output)")
        let recovered = try recordctl(["recover", crashed])
        #expect(recovered.status == 0, "\(recovered.output)")
        #expect(recovered.stdout.contains("recovered"), "\(recovered.stdout)")
        let decode = try tool("ffmpeg", ["-v", "error", "-i", crashed, "-f", "null", "-"])
        #expect(decode.status == 0 && decode.stderr.isEmpty, "ffmpeg: \(decode.stderr)")
        let verifyRecovered = try recordctl(["verify", crashed])
        #expect(verifyRecovered.status == 0, "\(verifyRecovered.output)")

        // stop: the recording appears as completed.
        let stop = try recordctl(["stop", sessionID, "--json"], environment: env)
        #expect(stop.status == 0, "\(stop.output)")
        #expect(try stop.json()["action"] as? String == "stop")
        let completed = try await eventually("the recording to complete") {
            try Self.recordings(env).first { $0["session_id"] as? String == sessionID && $0["status"] as? String == "completed" }
        }
        let recordingID = try #require(completed["id"] as? String)
        let file = try #require(completed["path"] as? String)
        #expect(try await watcher.waitForExit(within: .seconds(20)) == 0, "recordctl events --count 3: \(watcher.log)")
        let seen = watcher.log.split(separator: "\n").filter { $0.hasPrefix("{") }.map {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]  // nil fails the next line's check
        }
        #expect(seen.map { $0?["type"] as? String } == ["session.started", "recording.finished", "session.ended"], "\(watcher.log)")
        #expect(seen.allSatisfy { $0?["session_id"] as? String == sessionID })
        #expect(seen.last??["status"] as? String == "completed")
        #expect(seen.dropFirst().first??["recording_id"] as? String == sessionID + "-0001")
        #expect(FileManager.default.fileExists(atPath: file))
        let one = try recordctl(["recording", recordingID, "--json"], environment: env)
        #expect(one.status == 0, "\(one.output)")
        let oneJSON = try one.json()
        #expect((oneJSON["recording"] as? [String: Any])?["id"] as? String == recordingID)
        #expect((oneJSON["tracks"] as? [[String: Any]])?.compactMap { $0["codec"] as? String }.sorted() == ["h264", "opus"])
        let oneText = try recordctl(["recording", recordingID], environment: env)
        #expect(oneText.stdout.contains("completed") && oneText.stdout.contains("front") && oneText.stdout.contains("320x240"), "\(oneText.stdout)")
        let verifyGood = try recordctl(["verify", file])
        #expect(verifyGood.status == 0, "\(verifyGood.output)")
        #expect(verifyGood.stdout.contains("OK"))
        try InspectAgreesWithFFprobe.check(file)

        // download (issue 17): the finished file over the admin API, byte for byte; an
        // existing file is not overwritten without --force.
        let downloads = try TemporaryDirectory(prefix: "download")
        let copy = downloads.path + "/copy.mp4"
        let download = try recordctl(["download", recordingID, "--output", copy], environment: env)
        #expect(download.status == 0, "\(download.output)")
        #expect(download.stdout.contains("downloaded recording \(recordingID)"), "\(download.stdout)")
        #expect(try tool("cmp", [file, copy]).status == 0, "the download differs from the server's file")
        #expect(!FileManager.default.fileExists(atPath: copy + ".part"))
        let again = try recordctl(["download", recordingID, "--output", copy], environment: env)
        #expect(again.status == 2 && again.stderr.contains("--force"), "\(again.output)")
        #expect(try recordctl(["download", recordingID, "--output", copy, "--force", "--json"], environment: env).json()["bytes"] as? Int
                == (try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int))
        let unknownDownload = try recordctl(["download", "no-such-recording", "--output", downloads.path + "/none.mp4"], environment: env)
        #expect(unknownDownload.status == 1 && unknownDownload.stderr.contains("no-such-recording"), "\(unknownDownload.output)")
        #expect(!FileManager.default.fileExists(atPath: downloads.path + "/none.mp4") && !FileManager.default.fileExists(atPath: downloads.path + "/none.mp4.part"))

        // export (issue 17): a range of one track as its own MP4, judged by ffprobe and ffmpeg.
        let exported = downloads.path + "/range.mp4"
        let export = try recordctl(["export", sessionID, "--from", "0.2", "--to", "0.9", "--track", "front", "--output", exported, "--json"],
                                   environment: env)
        #expect(export.status == 0, "\(export.output)")
        let exportJSON = try export.json()
        #expect(exportJSON["tracks"] as? [String] == ["front"])
        let exportFrom = try #require(exportJSON["from"] as? Double), exportTo = try #require(exportJSON["to"] as? Double)
        #expect(exportFrom <= 0.2 && exportFrom > 0.1 && exportTo == 0.9, "\(exportJSON)")
        let exportDecode = try tool("ffmpeg", ["-v", "error", "-i", exported, "-f", "null", "-"])
        #expect(exportDecode.status == 0 && exportDecode.stderr.isEmpty, "ffmpeg: \(exportDecode.stderr)")
        let exportProbe = try FFprobe.probe(exported).result
        #expect(exportProbe.streams.map { $0.handlerName ?? "?" } == ["front"] && exportProbe.streams.first?.codecName == "h264")
        let shownPictures = exportProbe.packets.filter { ($0.pts ?? -1) >= 0 }
        let frameTicks = try #require(shownPictures.first?.duration)
        let exportEnd = try #require(shownPictures.compactMap(\.pts).max()) + frameTicks
        #expect(abs(exportEnd - Int64((exportTo - exportFrom) * 90000)) <= frameTicks, "the export ends at \(exportEnd) ticks")
        let wrongTrack = try recordctl(["export", sessionID, "--track", "side", "--output", downloads.path + "/side.mp4"], environment: env)
        #expect(wrongTrack.status == 2 && wrongTrack.stderr.contains("front, tone") && !wrongTrack.stderr.contains("ERROR"), "\(wrongTrack.output)")

        // cancel: status cancelled and no file.
        let second = try recordctl(["start", "--agent", "cam-1", "--wait", "15", "--json"], environment: env)
        #expect(second.status == 0, "\(second.output)")
        let cancelledSession = try #require(try second.json()["session_id"] as? String)
        let cancelledLive = try await eventually("the second session to write its file") { () -> [String: Any]? in
            let s = try Self.sessions(env).first { $0["id"] as? String == cancelledSession }
            let samples = (s?["tracks"] as? [[String: Any]] ?? []).map { ($0["samples"] as? Int) ?? 0 }
            return samples.count == 2 && samples.allSatisfy({ $0 >= 10 }) ? s : nil
        }
        let cancelledPath = try #require(cancelledLive["path"] as? String)
        #expect(FileManager.default.fileExists(atPath: cancelledPath))
        // A file still being written is not downloadable; the message says when it will be.
        let liveRow = try await eventually("the live file's row (written with its first durable fragment)") {
            try Self.recordings(env, ["--status", "recording"]).first
        }
        let liveID = try #require(liveRow["id"] as? String)
        let liveDownload = try recordctl(["download", liveID, "--output", downloads.path + "/live.mp4"], environment: env)
        #expect(liveDownload.status == 1 && liveDownload.stderr.contains("still being written"), "\(liveDownload.output)")
        // A running session exports what is durable so far.
        let liveExport = try recordctl(["export", cancelledSession, "--track", "tone", "--output", downloads.path + "/live-range.mp4"], environment: env)
        #expect(liveExport.status == 0 && liveExport.stdout.contains("exported tone of session"), "\(liveExport.output)")
        let liveExportDecode = try tool("ffmpeg", ["-v", "error", "-i", downloads.path + "/live-range.mp4", "-f", "null", "-"])
        #expect(liveExportDecode.status == 0 && liveExportDecode.stderr.isEmpty, "ffmpeg: \(liveExportDecode.stderr)")
        let cancel = try recordctl(["cancel", cancelledSession], environment: env)
        #expect(cancel.status == 0, "\(cancel.output)")
        #expect(cancel.stdout.contains("cancel requested for session \(cancelledSession)"))
        _ = try await eventually("the cancelled session to end") {
            try Self.sessions(env).contains { $0["id"] as? String == cancelledSession } ? nil : true
        }
        // The server records the session as cancelled and keeps neither the file nor a recording row.
        let catalog = try Catalog(path: fixture.dataDirectory + "/catalog.sqlite")
        #expect(try catalog.session(id: cancelledSession)?.status == .cancelled)
        #expect(!FileManager.default.fileExists(atPath: cancelledPath), "cancelled file remains: \(cancelledPath)")
        #expect(try Self.recordings(env).allSatisfy { $0["session_id"] as? String != cancelledSession })

        // A second completed recording, later than the first, for the filters.
        let third = try recordctl(["start", "--agent", "cam-1", "--label", "take=3", "--wait", "15", "--json"], environment: env)
        let thirdSession = try #require(try third.json()["session_id"] as? String)
        _ = try await eventually("the third session to have samples") { () -> Bool? in
            let s = try Self.sessions(env).first { $0["id"] as? String == thirdSession }
            let samples = (s?["tracks"] as? [[String: Any]] ?? []).map { ($0["samples"] as? Int) ?? 0 }
            return samples.count == 2 && samples.allSatisfy({ $0 >= 10 }) ? true : nil
        }
        #expect(try recordctl(["stop", thirdSession], environment: env).status == 0)
        let later = try await eventually("the third recording to complete") {
            try Self.recordings(env).first { $0["session_id"] as? String == thirdSession && $0["status"] as? String == "completed" }
        }
        let laterID = try #require(later["id"] as? String)
        // One millisecond before the later recording (responses round to milliseconds): after the first one.
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let laterText = try #require(later["created_at"] as? String)
        let laterDate = try #require(formatter.date(from: laterText))
        let laterCreated = formatter.string(from: laterDate.addingTimeInterval(-0.001))

        // recordings filters.
        #expect(Set(try Self.recordings(env, ["--status", "completed"]).compactMap { $0["id"] as? String }) == [recordingID, laterID])
        #expect(try Self.recordings(env, ["--status", "cancelled"]).isEmpty)
        #expect(try Self.recordings(env, ["--status", "recording"]).isEmpty)
        #expect(try Self.recordings(env, ["--agent", "cam-1"]).count == 2)
        #expect(try Self.recordings(env, ["--agent", "cam-2"]).isEmpty)
        #expect(try Self.recordings(env, ["--since", "2000-01-01T00:00:00Z", "--until", "2100-01-01T00:00:00Z"]).count == 2)
        #expect(try Self.recordings(env, ["--since", laterCreated]).compactMap { $0["id"] as? String } == [laterID])
        #expect(try Self.recordings(env, ["--until", laterCreated]).compactMap { $0["id"] as? String } == [recordingID])
        #expect(try Self.recordings(env, ["--since", "2100-01-01T00:00:00Z"]).isEmpty)
        #expect(try Self.recordings(env, ["--until", "2000-01-01T00:00:00.5+02:00"]).isEmpty)
        let limited = try recordctl(["recordings", "--limit", "1", "--json"], environment: env)
        #expect((try limited.json()["recordings"] as? [Any])?.count == 1)
        #expect(try limited.json()["limit"] as? Int == 1)
        let listing = try recordctl(["recordings", "--status", "completed"], environment: env)
        #expect(listing.stdout.contains(recordingID) && listing.stdout.contains("STATUS"), "\(listing.stdout)")
        let badStatus = try recordctl(["recordings", "--status", "done"], environment: env)
        #expect(badStatus.status == 2 && badStatus.stderr.contains("invalid --status"), "\(badStatus.output)")

        // delete: file and row gone.
        let delete = try recordctl(["delete", recordingID] + Self.pollTimeout, environment: env)
        #expect(delete.status == 0, "\(delete.output)")
        #expect(delete.stdout.contains("deleted recording \(recordingID)"))
        #expect(!FileManager.default.fileExists(atPath: file))
        #expect(!FileManager.default.fileExists(atPath: (file as NSString).deletingLastPathComponent),
                "the session's directory, with its session.mcrp, goes with its last file")
        let gone = try recordctl(["recording", recordingID], environment: env)
        #expect(gone.status == 1, "\(gone.output)")
        #expect(gone.stderr.contains(recordingID), "the server's not-found message: \(gone.stderr)")
        #expect(try Self.recordings(env, ["--status", "completed"]).compactMap { $0["id"] as? String } == [laterID])

        // The server's 404 message for an unknown session.
        let unknown = try recordctl(["stop", "no-such-session"], environment: env)
        #expect(unknown.status == 1)
        #expect(unknown.stderr.contains("no-such-session"), "\(unknown.stderr)")
        let noAgent = try recordctl(["start", "--agent", "cam-9"], environment: env)
        #expect(noAgent.status == 1, "\(noAgent.output)")
        #expect(noAgent.stderr.contains("cam-9"), "\(noAgent.stderr)")
        await fixture.stop()
    }

    /// Issue 13, finding 7: a camera that cannot open used to show only in the agent's journal;
    /// the agent looked healthy and `start --wait` timed out with no reason.
    @Test(.timeLimit(.minutes(1)))
    func anAgentThatCannotCaptureTellsStartAndAgentsWhy() async throws {
        let fixture = try ServerWithAgent()
        try await fixture.start()
        let missing = "/dev/video-missing-\(UUID().uuidString.prefix(8))"
        try await fixture.startAgent(id: "cam-9", sources: ["front=test:320x240@30", "back=v4l2:\(missing)"])
        defer { Task { await fixture.stop() } }
        let env = fixture.environment
        try await fixture.connectedAgents()
        let healthy = try recordctl(["agents"], environment: env)
        #expect(healthy.stdout.contains("CAPTURE") && healthy.stdout.contains(" ok"), "\(healthy.stdout)")

        // The start fails at once, with the agent's reason, instead of waiting out --wait.
        let start = try recordctl(["start", "--agent", "cam-9", "--wait", "30"], environment: env)
        #expect(start.status == 1, "\(start.output)")
        #expect(start.stderr.contains("cam-9 cannot capture") && start.stderr.contains("back") && start.stderr.contains(missing),
                "\(start.stderr)")
        #expect(!start.stderr.contains(".build/"), "no build paths: \(start.stderr)")
        print("a start the agent cannot capture for, as recordctl prints it: \(start.stderr)")

        // The agent shows the failure, as JSON and in the table, and nothing was opened.
        let agents = try recordctl(["agents", "--json"], environment: env).json()["agents"] as? [[String: Any]] ?? []
        let failure = try #require(agents.first?["capture_failure"] as? [String: Any])
        #expect((failure["message"] as? String)?.contains(missing) == true, "\(failure)")
        #expect(failure["at"] is String)
        let table = try recordctl(["agents"], environment: env)
        #expect(table.stdout.contains("failed") && table.stdout.contains("cam-9: capture failed at") && table.stdout.contains(missing),
                "\(table.stdout)")
        #expect(try Self.sessions(env).isEmpty)
        #expect(try Self.recordings(env).isEmpty)
        var request = URLRequest(url: try #require(URL(string: fixture.adminURL + "/metrics")))
        request.setValue("Bearer \(ServerWithAgent.adminToken)", forHTTPHeaderField: "Authorization")
        let metrics = String(decoding: try await URLSession.shared.data(for: request).0, as: UTF8.self)
        #expect(metrics.contains("recordserver_capture_failures_total 1"), "\(metrics)")

        // Issue 13, finding 9: RTT was always empty. The server's heartbeats give it within one interval.
        let rtt = try await eventually("a round-trip time from the heartbeats") { () -> Double? in
            let list = try recordctl(["agents", "--json"], environment: env).json()["agents"] as? [[String: Any]] ?? []
            return (list.first?["round_trip_millis"] as? NSNumber)?.doubleValue
        }
        #expect(rtt >= 0 && rtt < 5000, "\(rtt) ms on loopback")

        // The agent is still connected and answers the next start the same way (no retry storm, no exit).
        let again = try recordctl(["start", "--agent", "cam-9", "--json"], environment: env)
        #expect(again.status == 1 && again.stderr.contains(missing), "\(again.output)")
    }

    @Test(.timeLimit(.minutes(1)))
    func wrongTokenIsRefusedWithExitCode3AndNeverPrinted() async throws {
        let fixture = try ServerWithAgent()
        try await fixture.start()
        let url = fixture.adminURL
        let secret = "wrong-token-7d41e0c9a8"
        let wrongFile = fixture.directory + "/wrong.token"
        try secret.write(toFile: wrongFile, atomically: true, encoding: .utf8)

        for (arguments, env) in [
            (["agents", "--server", url, "--token", secret], [String: String]()),
            (["sessions", "--server", url, "--token-file", wrongFile], [:]),
            (["recordings", "--json"], ["RECORDCTL_SERVER": url, "RECORDCTL_TOKEN": secret]),
            (["top", "--once"], ["RECORDCTL_SERVER": url, "RECORDCTL_TOKEN_FILE": wrongFile]),
        ] {
            let result = try recordctl(arguments, environment: env)
            #expect(result.status == 3, "\(arguments): \(result.output)")
            #expect(result.stderr.contains("the admin token was refused"), "\(result.stderr)")
            #expect(!result.output.contains(secret), "the token leaked: \(result.output)")
        }
        let noToken = try recordctl(["agents", "--server", url])
        #expect(noToken.status == 3)
        #expect(noToken.stderr.contains("no admin token given"), "\(noToken.stderr)")

        // The right token from a file works.
        let ok = try recordctl(["agents", "--server", url, "--token-file", fixture.tokenFile])
        #expect(ok.status == 0, "\(ok.output)")
        #expect(ok.stdout.contains("no agents connected"))
        await fixture.stop()

        let refused = try recordctl(["agents", "--server", url, "--token", secret])
        #expect(refused.status == 3)
        #expect(refused.stderr.contains("cannot reach record-server at \(url)"), "\(refused.stderr)")
        #expect(!refused.output.contains(secret))
    }
}

extension RemoteControlTests {
    /// `~/.config/recordctl/config.json` (or `--config`, `$RECORDCTL_CONFIG`) gives the server
    /// and the token file; flags and the environment win over it; a named file that is missing
    /// or malformed is a usage error (exit 2) that says what is expected.
    @Test func theConfigFileGivesServerAndTokenAndFlagsWin() async throws {
        let fixture = try ServerWithAgent()
        try await fixture.start()
        let home = fixture.directory + "/home"
        try FileManager.default.createDirectory(atPath: home + "/.config/recordctl", withIntermediateDirectories: true)
        let settings = #"{"server": "\#(fixture.adminURL)", "tokenFile": "\#(fixture.tokenFile)"}"#
        try settings.write(toFile: home + "/.config/recordctl/config.json", atomically: true, encoding: .utf8)

        let fromDefaultFile = try recordctl(["agents"], environment: ["HOME": home])
        #expect(fromDefaultFile.status == 0, "\(fromDefaultFile.output)")
        #expect(fromDefaultFile.stdout.contains("no agents connected"))

        // The flag wins over the file: nothing listens on port 9 of loopback.
        let flagWins = try recordctl(["agents", "--server", "http://127.0.0.1:9"], environment: ["HOME": home])
        #expect(flagWins.status == 3, "\(flagWins.output)")
        #expect(flagWins.stderr.contains("cannot reach record-server at http://127.0.0.1:9"), "\(flagWins.stderr)")

        let explicit = fixture.directory + "/other.json"
        try settings.write(toFile: explicit, atomically: true, encoding: .utf8)
        let viaEnvironment = try recordctl(["sessions"], environment: ["HOME": "/nonexistent", "RECORDCTL_CONFIG": explicit])
        #expect(viaEnvironment.status == 0, "\(viaEnvironment.output)")

        let missing = try recordctl(["agents", "--config", fixture.directory + "/absent.json"])
        #expect(missing.status == 2, "\(missing.output)")
        #expect(missing.stderr.contains("absent.json does not exist"), "\(missing.stderr)")
        try "{ server: nope".write(toFile: explicit, atomically: true, encoding: .utf8)
        let malformed = try recordctl(["agents", "--config", explicit])
        #expect(malformed.status == 2, "\(malformed.output)")
        #expect(malformed.stderr.contains(#"expected {"server": "http://HOST:PORT", "tokenFile": "PATH"}"#), "\(malformed.stderr)")
        // A misspelt key would leave the token unset without a word: refused, with the near miss.
        try #"{"server": "http://127.0.0.1:9", "tokenfile": "/x"}"#.write(toFile: explicit, atomically: true, encoding: .utf8)
        let misspelt = try recordctl(["agents", "--config", explicit])
        #expect(misspelt.status == 2, "\(misspelt.output)")
        #expect(misspelt.stderr.contains(#"unknown key "tokenfile" (did you mean "tokenFile"?)"#), "\(misspelt.stderr)")
        await fixture.stop()
    }
}

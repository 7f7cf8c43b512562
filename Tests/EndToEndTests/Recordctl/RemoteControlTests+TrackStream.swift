import Foundation
import Testing
import TestSupport

/// `GET /v1/sessions/{id}/tracks/{label}/stream` (issue 17): a track as fragmented MP4 for
/// Media Source Extensions, over a real admin listener, fetched by curl while the session
/// records and after it has finished, and judged by ffprobe and ffmpeg against the recording.
///
/// In the serialized suite of the other real-server tests, and every tool that talks to the
/// server runs off the cooperative pool: two tests blocking its two threads at once starve
/// every in-process server of the test run (seen: agents' Hellos not read within 10 s).
extension RemoteControlTests {
    @Test(.timeLimit(.minutes(3)))
    func aLiveStreamFollowsTheSessionToItsEndAndAFinishedOneHoldsEverything() async throws {
        let fixture = try ServerWithAgent()
        try await fixture.start()
        try await fixture.startAgent(id: "cam-s")
        defer { Task { await fixture.stop() } }
        let env = fixture.environment
        try await fixture.connectedAgents()
        // Generous waits: the whole suite runs servers and encoders side by side on two cores.
        let started = try await offPool { try recordctl(["start", "--agent", "cam-s", "--wait", "30", "--json"] + RemoteControlTests.pollTimeout, environment: env) }
        try #require(started.status == 0, "\(started.output)")
        let sessionID = try #require(try started.json()["session_id"] as? String, "\(started.output)")
        let url = fixture.adminURL + "/v1/sessions/\(sessionID)/tracks/front/stream"
        let auth = "Authorization: Bearer \(ServerWithAgent.adminToken)"
        let out = fixture.directory + "/live-front.mp4"
        let headers = fixture.directory + "/live-front.headers"
        // The stream opens once the first fragment is durable (404 before the file's first row).
        let curl = try await eventually("the live stream to open") { () -> ChildProcess? in
            let probe = try await runToolOffPool("curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", auth, "--max-time", "1", url])
            guard probe.stdoutText.hasPrefix("200") || probe.status == 28 else { return nil }  // 28: cut by --max-time, i.e. streaming
            return try ChildProcess("/usr/bin/curl", ["-s", "-D", headers, "-H", auth, "-o", out, url],
                                    logPath: fixture.directory + "/curl-live.log")
        }
        _ = try await eventually("a few seconds of fragments to arrive") { () -> Bool? in
            // curl creates the file with the first bytes; until then there is nothing, size 0.
            let size = (try? FileManager.default.attributesOfItem(atPath: out)[.size] as? Int) ?? 0
            return size > 60_000 ? true : nil
        }
        #expect(try await offPool { try recordctl(["stop", sessionID] + RemoteControlTests.pollTimeout, environment: env) }.status == 0)
        #expect(try await curl.waitForExit(within: .seconds(30)) == 0, "the stream ends with the session: \(curl.log)")
        let head = try String(contentsOfFile: headers, encoding: .utf8).lowercased()
        #expect(head.contains("content-type: video/mp4; codecs=\"avc1.") && head.contains("x-stream-start: "), "\(head)")

        let file = try await eventually("the recording to complete") { () -> String? in
            let listing = try await offPool { try recordctl(["recordings", "--json"] + RemoteControlTests.pollTimeout, environment: env) }
            let list = try listing.json()["recordings"] as? [[String: Any]] ?? []
            return list.first { $0["session_id"] as? String == sessionID && $0["status"] as? String == "completed" }?["path"] as? String
        }
        let recorded = try FFprobe.probe(file).result
        let front = try #require(recorded.stream(label: "front"))
        let frames = recorded.packets(stream: front.index)

        // Live: from a keyframe, every later picture of the recording exactly once, same times and sizes.
        let live = try FFprobe.probe(out).result
        #expect(try tool("ffmpeg", ["-v", "error", "-i", out, "-f", "null", "-"]).stderr.isEmpty)
        let streamed = live.packets(stream: 0)
        let firstPTS = try #require(streamed.first?.pts)
        let start = try #require(frames.firstIndex { $0.pts == firstPTS }, "the stream's first picture (pts \(firstPTS)) is in the recording")
        #expect(frames[start].isKeyframe)
        #expect(streamed.map(\.pts) == frames[start...].map(\.pts), "\(streamed.count) streamed, \(frames.count - start) recorded from there")
        #expect(streamed.map(\.size) == frames[start...].map(\.size))

        // Finished: the whole track from its start.
        let whole = fixture.directory + "/whole-tone.mp4"
        let fetched = try await runToolOffPool("curl", ["-s", "-H", auth, "-o", whole, fixture.adminURL + "/v1/sessions/\(sessionID)/tracks/tone/stream"])
        #expect(fetched.status == 0)
        #expect(try tool("ffmpeg", ["-v", "error", "-i", whole, "-f", "null", "-"]).stderr.isEmpty)
        let tone = try #require(recorded.stream(label: "tone"))
        let toneStreamed = try FFprobe.probe(whole).result.packets(stream: 0)
        let toneRecorded = recorded.packets(stream: tone.index).filter { ($0.pts ?? -1) >= 0 }
        #expect(toneStreamed.map(\.size) == toneRecorded.map(\.size), "\(toneStreamed.count) streamed, \(toneRecorded.count) recorded")

        // Refusals: an unknown track lists the session's; an unknown session is 404.
        let unknown = try await runToolOffPool("curl", ["-s", "-w", "\n%{http_code}", "-H", auth, fixture.adminURL + "/v1/sessions/\(sessionID)/tracks/side/stream"])
        #expect(unknown.stdoutText.hasSuffix("400") && unknown.stdoutText.contains("front, tone"), "\(unknown.stdoutText)")
        let missing = try await runToolOffPool("curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", auth, fixture.adminURL + "/v1/sessions/nope/tracks/front/stream"])
        #expect(missing.stdoutText == "404")
        let anonymous = try await runToolOffPool("curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", url])
        #expect(anonymous.stdoutText == "401")
    }
}

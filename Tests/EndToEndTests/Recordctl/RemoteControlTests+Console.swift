import Foundation
import Testing
import TestSupport

/// The web console (issue 17) in Debian's chromium, headless, driven by selenium
/// (Tests/Browser/console_browser.py) against a real record-server and a real capture agent
/// with two test cameras that flash at the same instants and a microphone: sign-in and its
/// refusals, 401 without the cookie, CSRF, path traversal, Range, a live session started from
/// the console and watched live, its figures changing, the finished recording downloaded
/// byte for byte and played with both cameras and the sound across its 2 s segment files,
/// picture-in-picture pixels at a flash, both cameras' frame numbers (their bar codes) equal
/// after each seek, phone width. Screenshots of every page go to `<test directory>/screenshots`.
///
/// In the serialized suite of the other real-server tests (two of them at once starve the
/// in-process servers on two cores); the browser runs off the cooperative pool.
extension RemoteControlTests {
    @Test(.timeLimit(.minutes(10)))
    func theWebConsoleInARealBrowser() async throws {
        try HeadlessBrowser.requireInstalled()
        try await HeavyTests.exclusively { try await browse() }
    }

    private func browse() async throws {
        let fixture = try ServerWithAgent()
        // Files of 2 s: the session the browser plays spans several, as a long one would.
        fixture.server.configuration.segment.maxSeconds = 2
        try await fixture.start()
        try await fixture.startAgent(id: "cam-web", sources: ["back=test:320x240@30", "front=test:320x240@30", "mic=test:audio"])
        defer { Task { await fixture.stop() } }
        try await fixture.connectedAgents()
        // The agents page shows each agent's clock offset, from the server's heartbeats (every
        // 5 s): on one host both monotonic clocks are the same clock, so it is about 0.
        let env = fixture.environment
        let offset = try await eventually("a heartbeat reply to give the clock offset") { () -> Double? in
            let listing = try await offPool { try recordctl(["agents", "--json"] + RemoteControlTests.pollTimeout, environment: env) }
            return (try listing.json()["agents"] as? [[String: Any]])?.first?["clock_offset_millis"] as? Double
        }
        #expect(abs(offset) < 100, "one host, one clock: offset \(offset) ms")
        let screenshots = ProcessInfo.processInfo.environment["CONSOLE_SCREENSHOTS"] ?? fixture.directory + "/screenshots"
        let result = try await runToolOffPool(HeadlessBrowser.python, [
            HeadlessBrowser.script("console_browser.py"), "--url", fixture.adminURL, "--token-file", fixture.tokenFile,
            "--agent", "cam-web", "--out", screenshots,
        ])
        for line in result.stdoutText.split(separator: "\n") where line.hasPrefix("figure: ") || line.hasPrefix("screenshots: ") {
            print("console \(line)")
        }
        #expect(result.status == 0, "browser checks failed:\n\(result.stdoutText.split(separator: "\n").filter { $0.hasPrefix("FAIL") }.joined(separator: "\n"))\n\(result.stderr.suffix(6000))")
        #expect(result.stdoutText.contains("ok: finished: the sound is present and decoded"), "the run reached the end:\n\(result.stdoutText.suffix(4000))")
    }
}

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import TestSupport
@testable import CaptureAgentCore

/// A real agent whose clock is 3 h ahead and runs 300 ppm fast (``SkewedClock``, what
/// `--clock-offset`/`--clock-drift-ppm` give) connects to a real server over TLS on loopback.
/// The server's clock model must find that offset and drift from its heartbeats alone, and
/// `recordctl agents` must show them. The true offset is known here: both run on this machine.
@Suite("Clock model, end to end")
struct ClockModelEndToEndTests {
    @Test("the server estimates an agent's clock offset and drift from heartbeats, and recordctl shows them")
    func estimatesAnInjectedOffsetAndDrift() async throws {
        let fixture = try ServerWithAgent()
        try await fixture.start()
        let skewed = SkewedClock(offset: 3 * 3_600_000_000_000 + 123_456_789, driftPPM: 300)
        try await fixture.startAgent(id: "cam-skewed", sources: ["front=test:160x120@5"], clock: skewed)
        let env = fixture.environment
        // 125 exchanges, one a second: two minutes pin the drift down whatever the scheduling
        // noise of a loaded machine (on a quiet one, about 7 s do).
        let clock = try await eventually("125 clock exchanges", seconds: 400) { () -> [String: Any]? in
            let result = try await offPool { try recordctl(["agents", "--json"] + RemoteControlTests.pollTimeout, environment: env) }
            let agent = (try result.json()["agents"] as? [[String: Any]])?.first
            guard let clock = agent?["clock"] as? [String: Any], (clock["exchanges"] as? Int ?? 0) >= 125 else { return nil }
            return clock
        }
        let truth = Double(skewed.now() - SystemMonotonicClock().now()) / 1e6
        let offset = try #require(clock["offset_millis"] as? Double)
        let drift = try #require(clock["drift_ppm"] as? Double)
        // The estimate belongs to the newest exchange, at most ~1 s ago: 0.3 ms of drift since.
        #expect(abs(offset - truth) <= 2, "estimated \(offset) ms, true \(truth) ms")
        // A loaded machine's scheduling jitter (a few ms; the whole suite runs beside this test)
        // leaves the slope a few ppm uncertain over two minutes; 300 ± 40 needs the drift tracked.
        #expect(abs(drift - 300) <= 40, "estimated \(drift) ppm, injected 300")
        #expect(try #require(clock["uncertainty_millis"] as? Double) < 2)
        #expect(try #require(clock["asymmetry_bound_millis"] as? Double) < 5, "half a loopback round trip")

        let table = try await offPool { try recordctl(["agents"] + RemoteControlTests.pollTimeout, environment: env) }
        #expect(table.stdout.contains("CLOCK OFFSET"))
        #expect(table.stdout.contains("+10800.1") || table.stdout.contains("+10800.2"), "the offset in seconds: \(table.stdout)")

        var request = URLRequest(url: try #require(URL(string: fixture.adminURL + "/metrics")))
        request.setValue("Bearer \(ServerWithAgent.adminToken)", forHTTPHeaderField: "Authorization")
        let metrics = String(decoding: try await URLSession.shared.data(for: request).0, as: UTF8.self)
        let driftLine = try #require(metrics.split(separator: "\n").first { $0.hasPrefix(#"recordserver_agent_clock_drift_ppm{agent="cam-skewed"}"#) })
        let driftMetric = try #require(Double(driftLine.split(separator: " ").last ?? ""))
        #expect(abs(driftMetric - 300) <= 40, "\(driftLine)")
        #expect(metrics.contains(#"recordserver_agent_clock_offset_seconds{agent="cam-skewed"} 10800."#), "\(metrics)")
        await fixture.stop()
    }
}

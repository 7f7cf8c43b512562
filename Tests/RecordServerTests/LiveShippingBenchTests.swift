import Foundation
@testable import RecordServerCore
import Shared
import Testing
import TestSupport

/// How far the live copy of a recording session lags behind the disk (issue 18's "upload
/// lag"): a session sent at real time (two 640x360 cameras at 30 fps and Opus) to a server
/// that ships to the local Ceph RGW; the server's own `recordserver_live_lag_seconds` histogram
/// gives, for every piece copied, the time from its oldest fragment being durable on disk to
/// the piece being stored. A figure, not a threshold: it runs with OBJECT_STORE_BENCH=1.
@Suite("Live shipping lag (benchmark)", .serialized,
       .enabled(if: ObjectStoreFixture.enabled && ProcessInfo.processInfo.environment["OBJECT_STORE_BENCH"] == "1",
                "needs OBJECT_STORE_BENCH=1 and OBJECT_STORE_TESTS=1"))
struct LiveShippingBenchTests {
    /// Process CPU time (user + system), seconds.
    private static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    /// The same session with and without live shipping: the lag, and the CPU shipping costs.
    @Test(.timeLimit(.minutes(8)), arguments: [false, true])
    func lagOfTheLiveCopyAtRealTime(shipping: Bool) async throws {
        let seconds = Double(ProcessInfo.processInfo.environment["LIVE_LAG_SECONDS"] ?? "60") ?? 60
        let store = try await ObjectStoreFixture.shared()
        let fixture = try ServerFixture()
        if shipping {
            fixture.configuration.objectStore = .init(url: "s3://\(ObjectStoreFixture.uniqueBucket("lag"))/?endpoint=\(store.endpoint)",
                                                      accessKeyFile: store.accessKeyFile, secretKeyFile: store.secretKeyFile)
        }
        let port = try await fixture.start()
        defer { Task { await fixture.stop() } }
        let content = try SessionContent.make(sessionID: "s-lag", seconds: seconds, width: 640, height: 360)
        let agent = try await fixture.connectAgent("agent-1", port: port)
        _ = try await agent.open(content.open)
        let cpuBefore = Self.cpuSeconds()
        let start = ContinuousClock.now
        let firstPTS = content.samples.map(\.pts).min() ?? 0
        for sample in content.samples {
            let due = start + .nanoseconds(sample.pts - firstPTS)
            if due > .now { try await Task.sleep(until: due) }
            try await agent.send(.sample(sample))
        }
        _ = try await agent.close("s-lag", finalSequence: UInt64(content.samples.count))
        let cpu = Self.cpuSeconds() - cpuBefore
        await agent.disconnect()
        let media = content.samples.reduce(0) { $0 + $1.data.readableBytes }
        print(String(format: "live-lag: shipping %@: %.2f CPU s for %.1f MB of media in %.0f s (%.1f CPU s per GB)",
                     shipping ? "on" : "off", cpu, Double(media) / 1e6, seconds, cpu / (Double(media) / 1e9)))
        guard shipping else { return }

        let text = try #require(fixture.server).metrics.exposition()
        func value(_ prefix: String) -> Double {
            text.split(separator: "\n").first { $0.hasPrefix(prefix) }.flatMap { Double($0.split(separator: " ").last ?? "") } ?? .nan
        }
        let count = value("recordserver_live_lag_seconds_count")
        let sum = value("recordserver_live_lag_seconds_sum")
        let buckets = text.split(separator: "\n").filter { $0.hasPrefix("recordserver_live_lag_seconds_bucket") }.compactMap { line -> (Double, Double)? in
            guard let le = line.split(separator: "\"").dropFirst().first, let n = Double(line.split(separator: " ").last ?? "") else { return nil }
            return (le == "+Inf" ? .infinity : Double(le) ?? .nan, n)
        }
        let p95 = buckets.first { $0.1 >= 0.95 * count }?.0 ?? .nan
        let maxBound = buckets.first { $0.1 >= count }?.0 ?? .nan
        let bytes = value("recordserver_live_bytes_total")
        print(String(format: "live-lag: %.0f s session at real time, %.0f pieces, %.1f MB; lag mean %.3f s, p95 ≤ %.3g s, max ≤ %.3g s",
                     seconds, count, bytes / 1e6, sum / count, p95, maxBound))
        #expect(count > 0)
    }
}

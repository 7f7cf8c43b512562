import Foundation
import Testing
import TestSupport

/// The clock model across hosts (scenario `multihost-clock`, docs/architecture.md "Clock
/// model"): three real agents, each in its own network namespace of the guest's kernel behind
/// a veth and `tc netem` (delays stepping through 20–80 ms every 20 s, 10 ms of jitter, the two
/// directions differing by +10, 0 and −20 ms), with clocks 1–7 h apart drifting +100, −100 and
/// +37 ppm, for 150 s; idle (the default: connected, no session) or recording
/// (`MULTIHOST_LOAD=recording`, which under TCG starves the guest: docs/benchmarks.md). `multihost_clock.py` polled `GET /v1/agents` every second; the agents' true
/// offsets are known from their logs (one kernel clock underneath). An estimate is judged
/// once it rests on 30 exchanges, against the truth moved by half the path's asymmetry — the
/// part two-way time transfer cannot see (its bound is checked too).
@Suite("Hardware bench: clock model across network namespaces", .serialized,
       .enabled(if: BenchResults.enabled, "needs HARDWARE_BENCH_RESULTS from scripts/hardware-test.sh (scripts/test.sh runs it)"))
struct MultihostClockBenchTests {
    struct Truth {
        var offset: Double  // ns
        var driftPPM: Double
        var anchor: Double  // ns of CLOCK_MONOTONIC
        var asymmetryMillis: Double

        /// The agent's clock minus the guest's at CLOCK_MONOTONIC `t`, ms.
        func offsetMillis(at t: Double) -> Double { (offset + (t - anchor) * driftPPM / 1e6) / 1e6 }
    }

    struct Sample {
        var error: Double  // estimate minus truth minus asymmetry / 2, ms
        var uncertainty: Double
    }

    static func percentile(_ values: [Double], _ p: Double) -> Double {
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
    }

    @Test func offsetsOfAgentsBehindNetemAreEstimatedWithinAFrameAndTheAsymmetryBound() throws {
        let scenario = try BenchResults.scenario("multihost-clock")
        let truthJSON = try #require(try JSONSerialization.jsonObject(with: Data(scenario.text("truth.json").utf8)) as? [String: [String: Any]])
        var truths: [String: Truth] = [:]
        for (id, t) in truthJSON {
            truths[id] = Truth(offset: try #require(t["offset_ns"] as? Double), driftPPM: try #require(t["drift_ppm"] as? Double),
                               anchor: try #require(t["anchor_ns"] as? Double), asymmetryMillis: try #require(t["asymmetry_ms"] as? Double))
        }
        #expect(truths.count == 3, "every agent logged its injected clock: \(scenario.directory.path)")
        for k in 1...3 { #expect(scenario.text("agent-h\(k).status").trimmingCharacters(in: .whitespacesAndNewlines) == "0", "agent h\(k)") }

        var samples: [String: [Sample]] = [:]
        var byPoll: [[String: Double]] = []
        var lastDrift: [String: (ppm: Double, exchanges: Int)] = [:]
        for line in scenario.text("polls.jsonl").split(separator: "\n") {
            let poll = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let t = try #require(poll["t"] as? Double)
            let agents = poll["agents"] as? [String: Any] ?? [:]
            var errors: [String: Double] = [:]
            for (id, value) in agents {
                guard let clock = value as? [String: Any], let truth = truths[id], (clock["exchanges"] as? Int ?? 0) >= 30,
                      let offset = clock["offset_millis"] as? Double else { continue }
                let error = offset - truth.offsetMillis(at: t) - truth.asymmetryMillis / 2
                samples[id, default: []].append(Sample(error: error, uncertainty: clock["uncertainty_millis"] as? Double ?? 0))
                errors[id] = error
                lastDrift[id] = (clock["drift_ppm"] as? Double ?? .nan, clock["exchanges"] as? Int ?? 0)
                let bound = clock["asymmetry_bound_millis"] as? Double ?? 0
                #expect(bound >= abs(truth.asymmetryMillis) / 2, "\(id): the asymmetry bound \(bound) ms covers half of \(truth.asymmetryMillis) ms")
            }
            byPoll.append(errors)
        }
        let seconds = Double(scenario.facts["recording_seconds"] ?? "") ?? 0
        let load = scenario.facts["load"] ?? "idle"
        for (id, truth) in truths.sorted(by: { $0.key < $1.key }) {
            let errors = (samples[id] ?? []).map(\.error)
            try #require(errors.count >= Int(seconds / 3), "\(id): \(errors.count) judged estimates over \(seconds) s")
            let magnitudes = errors.map(abs)
            let median = Self.percentile(magnitudes, 0.5), p99 = Self.percentile(magnitudes, 0.99), worst = magnitudes.max() ?? 0
            let drift = lastDrift[id]?.ppm ?? .nan
            let exchanges = lastDrift[id]?.exchanges ?? 0
            figure("multihost-clock (\(load), \(Int(seconds)) s)", String(format: "%@: |offset error − asymmetry/2| median %.2f ms, p99 %.2f ms, worst %.2f ms over %d estimates; drift %.1f ppm estimated, %.1f injected; asymmetry %+.0f ms",
                                             id, median, p99, worst, errors.count, drift, truth.driftPPM, truth.asymmetryMillis))
            #expect(median <= 5, "\(id): median error \(median) ms")
            #expect(worst <= 16.5, "\(id): worst error \(worst) ms (two agents off in opposite directions by this much are one frame apart)")
            // The drift, once the exchanges span two minutes (one a second; a run of 150 s or
            // more gets there). On this path (delay steps every 20 s, ±10 ms of jitter) two
            // minutes pin it down to about 12 ppm rms: ClockModelTests'
            // theDriftOfAJitteryPathIsKnownToTensOfPPMAfter140Seconds, and 30 hosts of earlier
            // bench runs (rms 11.9 ppm, worst 32 ppm; docs/benchmarks.md). 50 ppm is four times
            // that spread, and what matters of it, the offset, is checked above: 50 ppm moves
            // it by 1 ms across a 20 s network cut.
            if seconds >= 150 { #expect(exchanges >= 125, "\(id): \(exchanges) exchanges at the end of \(seconds) s") }
            if exchanges >= 125 { #expect(abs(drift - truth.driftPPM) <= 50, "\(id): drift \(drift) ppm, injected \(truth.driftPPM)") }
        }
        // Between hosts: what aligning two agents' tracks would be off by, beyond their asymmetries.
        let ids = truths.keys.sorted()
        for (i, a) in ids.enumerated() {
            for b in ids[(i + 1)...] {
                let differences = byPoll.compactMap { poll -> Double? in
                    guard let x = poll[a], let y = poll[b] else { return nil }
                    return abs(x - y)
                }
                guard !differences.isEmpty else { continue }
                let median = Self.percentile(differences, 0.5), p99 = Self.percentile(differences, 0.99), worst = differences.max() ?? 0
                figure("multihost-clock (\(load), \(Int(seconds)) s)", String(format: "%@ vs %@: |relative offset error| median %.2f ms, p99 %.2f ms, worst %.2f ms", a, b, median, p99, worst))
                #expect(median <= 5 && worst <= 33, "\(a) vs \(b): median \(median) ms, worst \(worst) ms")
            }
        }
    }
}

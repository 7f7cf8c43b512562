import DequeModule

/// Maps one agent's sample times onto the server's timeline (docs/architecture.md, "Clock
/// model"): a continuous, strictly increasing, piecewise-linear function of the agent's time
/// that follows the ``ClockEstimator``'s estimate without ever jumping.
///
/// Each update adds a breakpoint at the newest agent time mapped so far (or later): from there
/// the mapping runs at the estimate's rate (1 / (1 + drift)) plus a correction that closes the
/// gap between where the mapping is and where the estimate says it should be within
/// ``convergence``, but never faster than ``maxSlewPPM``. A time already mapped keeps its
/// value, so samples of several tracks mapped in any order keep their order and spacing; a
/// track's decode times stay strictly increasing as long as they are more than
/// `maxSlewPPM + drift` ppm of their spacing apart, which any real frame or packet spacing is.
///
/// A gap of more than ``stepThreshold`` is not slewed but stepped: it means the agent's clock
/// itself jumped (a host reboot behind a resume), and slewing away hours would take years.
struct ClockMapping: Sendable {
    private struct Breakpoint: Sendable, Equatable {
        var agent: Int64
        var server: Int64
        /// Server nanoseconds per agent nanosecond from `agent` on.
        var rate: Double
    }

    /// The largest correction rate, parts per million of elapsed time (500 ppm: 0.5 ms per second).
    let maxSlewPPM: Double
    /// The time over which a gap is closed when the slew limit allows, agent nanoseconds.
    let convergence: Int64
    /// A gap larger than this is stepped, nanoseconds.
    let stepThreshold: Int64
    /// The most breakpoints kept; older samples map through the oldest kept one.
    let capacity: Int

    private var breakpoints = Deque<Breakpoint>()
    /// The newest agent time mapped: a breakpoint never goes before it, so what was mapped stays.
    private var newestMapped: Int64?
    /// Times the mapping stepped instead of slewing.
    private(set) var steps = 0

    init(maxSlewPPM: Double = 500, convergence: Int64 = 10_000_000_000, stepThreshold: Int64 = 1_000_000_000, capacity: Int = 4096) {
        self.maxSlewPPM = maxSlewPPM
        self.convergence = convergence
        self.stepThreshold = stepThreshold
        self.capacity = capacity
    }

    /// Whether an estimate has been taken (before that, nothing can be mapped).
    var isReady: Bool { !breakpoints.isEmpty }

    /// Follows a new estimate from agent time `agentNow` on (the agent's time of the exchange
    /// that produced it, or later).
    mutating func update(_ estimate: ClockEstimator.Estimate, agentNow: Int64) {
        let rate = 1 / (1 + estimate.driftPPM / 1e6)
        // Until a time is mapped nothing needs to stay continuous: the mapping is the estimate.
        guard let last = breakpoints.last, newestMapped != nil else {
            breakpoints = [Breakpoint(agent: agentNow, server: estimate.serverTime(forAgentTime: agentNow), rate: rate)]
            return
        }
        let at = max(agentNow, newestMapped ?? agentNow, last.agent)
        let current = Self.evaluate(last, at)
        let target = estimate.serverTime(forAgentTime: at)
        let gap = target &- current
        if abs(gap) > stepThreshold {
            steps += 1
            append(Breakpoint(agent: at, server: target, rate: rate))
            return
        }
        let wanted = Double(gap) / Double(convergence)
        let limit = maxSlewPPM / 1e6
        append(Breakpoint(agent: at, server: current, rate: rate + min(max(wanted, -limit), limit)))
    }

    /// The server time of agent time `agentTime`; nil before the first estimate.
    mutating func serverTime(forAgentTime agentTime: Int64) -> Int64? {
        guard let point = breakpoint(for: agentTime) else { return nil }
        newestMapped = max(newestMapped ?? agentTime, agentTime)
        return Self.evaluate(point, agentTime)
    }

    /// The last breakpoint at or before `agentTime` (the first one for earlier times).
    private func breakpoint(for agentTime: Int64) -> Breakpoint? {
        guard var low = breakpoints.indices.first else { return nil }
        var high = breakpoints.count - 1
        if agentTime >= breakpoints[high].agent { return breakpoints[high] }
        while low < high {
            let middle = (low + high + 1) / 2
            if breakpoints[middle].agent <= agentTime { low = middle } else { high = middle - 1 }
        }
        return breakpoints[low]
    }

    private mutating func append(_ point: Breakpoint) {
        if breakpoints.last?.agent == point.agent { breakpoints.removeLast() }
        breakpoints.append(point)
        while breakpoints.count > capacity { breakpoints.removeFirst() }
    }

    private static func evaluate(_ point: Breakpoint, _ agentTime: Int64) -> Int64 {
        point.server &+ Int64((Double(agentTime &- point.agent) * point.rate).rounded())
    }
}

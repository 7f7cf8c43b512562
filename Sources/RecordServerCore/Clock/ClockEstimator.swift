import DequeModule
import AdminModels

/// How an agent's monotonic clock runs against the server's, estimated from the heartbeat
/// exchanges of its connection (docs/architecture.md, "Clock model"). Sans-I/O: it is given
/// exchanges and answers with an estimate; the connection decides when to probe.
///
/// Each exchange gives an offset (agent minus server) whose error is half the difference of
/// the two directions' delays. Queueing only ever adds delay, so an exchange whose round trip
/// is close to the smallest one seen around it went through nearly empty queues both ways, and
/// its offset is good to about half its *excess* round trip. The estimator therefore:
///
/// 1. keeps the exchanges of the last ``window`` (bounded in count too);
/// 2. compares each one's round trip with the smallest within ``localSpan`` of it (so a path
///    whose base delay changes is judged against its own recent best, not a stale minimum: after
///    a step up in the path's delay, the exchanges are judged against the larger round trips
///    within ``localSpan`` instead of being weighed as queued until the old minimum ages out);
/// 3. weights it 1 / (c² + excess²), with c half the median excess (at least the timing noise,
///    at most 5 ms): on a path with ±10 ms of jitter a delay spike of 50 ms weighs about 1/100
///    of a clean exchange;
/// 4. fits offset = a + b·t by weighted least squares over the server's time, from the third
///    exchange on: `b` is the drift, shrunk towards 0 by a ±200 ppm prior as far as the
///    exchanges leave it open. How open is judged by the larger of what the weights predict
///    and how the exchanges really scatter about the line, so a few jittery exchanges over a
///    short span give a drift near 0 and a minute of clean ones gives the clock's own. (A drift
///    taken as 0 until it is pinned down lags a ±100 ppm clock by a millisecond every 10 s the
///    estimate rests on older exchanges, and two agents drifting apart by 200 ppm then sit
///    milliseconds apart.)
/// 5. reports the offset at the newest exchange, the drift, the smallest round trip, and a
///    one-sigma uncertainty (the larger of what the weights predict and what the residuals show).
///
/// What it cannot see: a path whose two directions differ by a constant Δ moves every offset
/// by Δ/2, and no two-way exchange can tell (``Estimate/asymmetryBound`` bounds it by half the
/// smallest round trip, since neither direction can take less than nothing).
struct ClockEstimator: Sendable {
    struct Estimate: Sendable, Equatable {
        /// The agent's clock minus the server's at server time ``at``, nanoseconds.
        var offset: Int64
        /// Server monotonic nanoseconds the offset belongs to (the newest exchange).
        var at: Int64
        /// How much faster the agent's clock runs than the server's, parts per million.
        var driftPPM: Double
        /// The smallest round trip among the exchanges of the window, nanoseconds.
        var roundTrip: Int64
        /// One standard deviation of ``offset`` as the exchanges scatter, nanoseconds. Path
        /// asymmetry is not in it (``asymmetryBound``).
        var uncertainty: Int64
        /// Exchanges the estimate rests on.
        var exchanges: Int

        /// The most a constant difference between the two directions can move ``offset``
        /// without any exchange showing it: half the smallest round trip.
        var asymmetryBound: Int64 { roundTrip / 2 }

        /// The offset at server time `t`, following the drift.
        func offset(atServerTime t: Int64) -> Int64 {
            offset &+ Int64((Double(t &- at) * driftPPM / 1e6).rounded())
        }

        /// The server time at which the agent's clock reads `agentTime`: the `s` with
        /// `agentTime − s = offset(atServerTime: s)`.
        func serverTime(forAgentTime agentTime: Int64) -> Int64 {
            // agentTime − offset − at = (s − at)(1 + drift)
            let sinceAt = Double(agentTime &- offset &- at) / (1 + driftPPM / 1e6)
            return at &+ Int64(sinceAt.rounded())
        }
    }

    /// How far back exchanges count, nanoseconds of server time.
    let window: Int64
    /// The most exchanges kept (a bound on memory whatever the probing rate).
    let capacity: Int
    /// Exchanges within this much server time of each other are judged against the same
    /// smallest round trip, nanoseconds.
    let localSpan: Int64
    /// The timing noise of one clean exchange, nanoseconds: the weight of an exchange with no
    /// excess round trip, and the floor of the uncertainty.
    let noiseFloor: Int64
    /// A fitted drift beyond this is clamped (crystals stay within ±100 ppm; a larger figure
    /// is noise over a short span, or a clock that is not a clock).
    let maxDriftPPM: Double

    /// The largest weighting scale c, nanoseconds (see ``fit()``).
    static let maxNoiseScale: Int64 = 5_000_000
    /// The drift's prior spread, ppm.
    static let driftPrior = 200.0

    private var exchanges = Deque<ClockExchange>()
    /// Exchanges refused as impossible (see ``ClockExchange/isPlausible``).
    private(set) var implausible = 0
    private(set) var estimate: Estimate?
    /// Whether this history comes from an earlier connection of the agent and waits for the
    /// first exchange of the new one to confirm it (``carryOver()``).
    private(set) var isCarriedOver = false
    /// Carried-over histories dropped because the new connection's first exchange disagreed.
    private(set) var restarts = 0

    /// How far a new connection's first exchange may land from the carried-over estimate's
    /// prediction beyond half its round trip, plus 200 ppm of the time since, nanoseconds.
    static let carryOverTolerance: Int64 = 50_000_000

    /// Whether there is an estimate that an exchange of the current connection confirmed.
    var isConfirmed: Bool { estimate != nil && !isCarriedOver }

    /// Readies this history for the agent's next connection. The agent's clock did not change
    /// while it was away, so its exchanges still say how that clock runs: the new connection
    /// goes on from the fitted offset and drift instead of from one exchange (samples sent
    /// after a reconnect, the backlog of a network cut among them, are mapped as well as those
    /// before it). The first exchange of the new connection must agree with the estimate;
    /// otherwise (the agent's host rebooted, or its clock was stepped) the history is dropped.
    mutating func carryOver() {
        isCarriedOver = estimate != nil
    }

    init(window: Int64 = 600_000_000_000, capacity: Int = 512, localSpan: Int64 = 10_000_000_000,
         noiseFloor: Int64 = 500_000, maxDriftPPM: Double = 1000) {
        self.window = window
        self.capacity = capacity
        self.localSpan = localSpan
        self.noiseFloor = noiseFloor
        self.maxDriftPPM = maxDriftPPM
    }

    /// Takes one exchange and updates ``estimate``; false (and nothing changes) when the
    /// exchange is impossible or older than the newest one taken.
    @discardableResult
    mutating func add(_ exchange: ClockExchange) -> Bool {
        guard exchange.isPlausible, exchanges.last.map({ exchange.serverMidpoint > $0.serverMidpoint }) ?? true else {
            implausible += 1
            return false
        }
        if isCarriedOver, let estimate {
            isCarriedOver = false
            let since = abs(exchange.serverMidpoint &- estimate.at)
            let tolerance = Self.carryOverTolerance &+ exchange.roundTrip / 2 &+ since / 5_000
            if abs(exchange.offset &- estimate.offset(atServerTime: exchange.serverMidpoint)) > tolerance {
                exchanges.removeAll()
                self.estimate = nil
                restarts += 1
            }
        }
        exchanges.append(exchange)
        while exchanges.count > capacity { exchanges.removeFirst() }
        while let first = exchanges.first, exchange.serverMidpoint - first.serverMidpoint > window { exchanges.removeFirst() }
        estimate = fit()
        return true
    }

    /// Each exchange's round trip minus the smallest one within `span` of it: a sliding-window
    /// minimum over the ascending times, linear in the number of exchanges.
    private static func excessRoundTrips(times: [Double], trips: [Int64], span: Double) -> [Int64] {
        // Minima of the window [times[i] - span, times[i] + span], as a monotonic queue of indices.
        var queue = Deque<Int>()
        var next = 0
        var excesses: [Int64] = []
        excesses.reserveCapacity(trips.count)
        for i in times.indices {
            while next < times.count, times[next] <= times[i] + span {
                while let last = queue.last, trips[last] >= trips[next] { queue.removeLast() }
                queue.append(next)
                next += 1
            }
            while let first = queue.first, times[first] < times[i] - span { queue.removeFirst() }
            excesses.append(trips[i] - trips[queue.first!])
        }
        return excesses
    }

    /// The weighted sums of a least-squares line through (time, offset) points, in milliseconds.
    private struct WeightedSums {
        let total: Double
        let meanTime: Double
        let meanOffset: Double
        /// Σ w (t − t̄)²
        let sxx: Double
        /// Σ w (t − t̄)(y − ȳ)
        let sxy: Double

        init(times: [Double], offsets: [Double], weights: [Double]) {
            total = weights.reduce(0, +)
            meanTime = zip(weights, times).reduce(0) { $0 + $1.0 * $1.1 } / total
            meanOffset = zip(weights, offsets).reduce(0) { $0 + $1.0 * $1.1 } / total
            var sxx = 0.0
            var sxy = 0.0
            for i in times.indices {
                sxx += weights[i] * (times[i] - meanTime) * (times[i] - meanTime)
                sxy += weights[i] * (times[i] - meanTime) * (offsets[i] - meanOffset)
            }
            self.sxx = sxx
            self.sxy = sxy
        }
    }

    /// How many times the variance of the weighted least-squares slope that the residuals show
    /// (the sandwich estimate) exceeds what the model expects of each exchange (variance
    /// 1 / (12 w), see ``fit()``); at least 1.
    private static func slopeScatter(_ sums: WeightedSums, times: [Double], offsets: [Double], weights: [Double]) -> Double {
        guard sums.sxx > 0 else { return 1 }
        let slope = sums.sxy / sums.sxx
        var observed = 0.0
        for i in times.indices {
            let leverage = weights[i] * (times[i] - sums.meanTime) / sums.sxx
            let residual = offsets[i] - sums.meanOffset - slope * (times[i] - sums.meanTime)
            observed += leverage * leverage * residual * residual
        }
        return max(1, observed * 12 * sums.sxx)
    }

    private func fit() -> Estimate? {
        guard let newest = exchanges.last else { return nil }
        // Work in milliseconds relative to the newest exchange: small numbers, full precision.
        let reference = newest.serverMidpoint
        let referenceOffset = newest.offset
        let ms = 1e6
        let floor = Double(noiseFloor) / ms
        let times = exchanges.map { Double($0.serverMidpoint &- reference) / ms }
        let offsets = exchanges.map { Double($0.offset &- referenceOffset) / ms }
        let trips = exchanges.map(\.roundTrip)
        let excesses = Self.excessRoundTrips(times: times, trips: trips, span: Double(localSpan) / ms).map { Double($0) / ms }
        // Even the best exchange of a stretch went through some queueing: on a jittery path its
        // error is a fraction of the typical excess, not the timing noise. Weighting by
        // 1 / (c² + excess²) with c half the median excess lets the good exchanges
        // average each other instead of one of them ruling each stretch.
        // c is capped: on a path where most exchanges queued for a long time (a starved host),
        // a c grown with them would weigh the worst like the best.
        let typical = excesses.sorted()[excesses.count / 2]
        let c = min(max(floor, typical / 2), Double(Self.maxNoiseScale) / ms)
        let weights = excesses.map { 1 / (c * c + $0 * $0) }
        let sums = WeightedSums(times: times, offsets: offsets, weights: weights)
        let fitsDrift = exchanges.count >= 3
        let (total, meanTime, meanOffset, sxx, sxy) = (sums.total, sums.meanTime, sums.meanOffset, sums.sxx, sums.sxy)
        // The slope is shrunk towards 0 by a prior of ±200 ppm (what crystals do), through each
        // exchange's variance: the model's 1 / (12 w), scaled up by as much as the exchanges
        // really scatter beyond it. With many good exchanges the prior does nothing; with a few
        // noisy ones over a short span it keeps a bogus slope from being extrapolated into the
        // offset.
        let prior = Self.driftPrior / 1e6
        let scatter = Self.slopeScatter(sums, times: times, offsets: offsets, weights: weights)
        let slope = fitsDrift && sxx > 0 ? min(max(sxy / (sxx + scatter / (12 * prior * prior)), -maxDriftPPM / 1e6), maxDriftPPM / 1e6) : 0
        let offsetNow = meanOffset + slope * (0 - meanTime)
        // The uncertainty of the fitted offset now, the larger of two figures: what the model
        // expects (an exchange's error is uniform within ± half its excess round trip, so its
        // variance is about (c² + excess²) / 12 = 1 / (12 w)), and what the residuals show
        // (the sandwich estimate). Each exchange counts through its leverage on the offset now.
        var modelVariance = 0.0
        var observedVariance = 0.0
        for i in times.indices where weights[i] > 0 {
            var leverage = weights[i] / total
            if fitsDrift, sxx > 0 { leverage += weights[i] * (times[i] - meanTime) * (0 - meanTime) / sxx }
            let residual = offsets[i] - (meanOffset + slope * (times[i] - meanTime))
            modelVariance += leverage * leverage / (12 * weights[i])
            observedVariance += leverage * leverage * residual * residual
        }
        let standardError = (max(modelVariance, observedVariance) + floor * floor).squareRoot()
        return Estimate(offset: referenceOffset &+ Int64((offsetNow * ms).rounded()), at: reference, driftPPM: slope * 1e6,
                        roundTrip: trips.min()!, uncertainty: Int64((standardError * ms).rounded()), exchanges: exchanges.count)
    }
}

extension AgentClock {
    /// What the admin API shows of an estimate.
    init(_ estimate: ClockEstimator.Estimate) {
        self.init(offsetMillis: Double(estimate.offset) / 1e6, driftPPM: estimate.driftPPM, uncertaintyMillis: Double(estimate.uncertainty) / 1e6,
                  asymmetryBoundMillis: Double(estimate.asymmetryBound) / 1e6, minRoundTripMillis: Double(estimate.roundTrip) / 1e6,
                  exchanges: estimate.exchanges)
    }
}

/// CLOCK_MONOTONIC as another host's clock would read it: `offset` nanoseconds ahead and
/// running `driftPPM` parts per million fast (`--clock-offset`, `--clock-drift-ppm`).
///
/// For tests and the multi-host bench (scripts/multihost-bench.sh): agents in network
/// namespaces of one machine share one kernel clock, so without this the server's clock model
/// would have nothing to estimate. Everything the agent stamps goes through it — samples,
/// V4L2 buffer times (``time(atSystemTime:)``) and its heartbeat replies — so to the server
/// the agent looks like a host whose clock booted `offset` earlier and runs fast. Devices and
/// test sources keep real time, as real devices do: their schedule is the machine's, only the
/// stamps are skewed.
public struct SkewedClock: MonotonicClock {
    public let offset: Int64
    public let driftPPM: Double
    /// CLOCK_MONOTONIC when the clock was made: the drift accumulates from here.
    public let anchor: Int64
    private let system = SystemMonotonicClock()

    public init(offset: Int64, driftPPM: Double) {
        self.offset = offset
        self.driftPPM = driftPPM
        anchor = system.now()
    }

    public func now() -> Int64 { time(atSystemTime: system.now()) }

    public func sleep(until deadline: Int64) {
        while now() < deadline { system.sleep(until: systemTime(at: deadline)) }
    }

    public func time(atSystemTime systemTime: Int64) -> Int64 {
        systemTime &+ offset &+ Int64((Double(systemTime &- anchor) * driftPPM / 1e6).rounded())
    }

    public func systemTime(at time: Int64) -> Int64 {
        // Rounded up, so that sleeping until it never wakes before `time`.
        anchor &+ Int64((Double(time &- offset &- anchor) / (1 + driftPPM / 1e6)).rounded(.up))
    }
}

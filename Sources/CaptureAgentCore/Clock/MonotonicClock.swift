#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// The one time base of the agent: nanoseconds of CLOCK_MONOTONIC (protocol.md §4.1).
///
/// Every component that reads the time or waits for it takes a clock, so that tests can
/// replace real time with ``ManualClock``. The methods are synchronous because capture
/// runs on dedicated threads (V4L2 `poll`, ALSA `snd_pcm_readi` block), never on the
/// Swift concurrency pool.
public protocol MonotonicClock: Sendable {
    /// Current time in nanoseconds.
    func now() -> Int64
    /// Blocks the calling thread until `now() >= deadline`.
    func sleep(until deadline: Int64)
    /// This clock's reading at the instant CLOCK_MONOTONIC reads `systemTime`: how a V4L2
    /// buffer's kernel timestamp, or a test source's real-time schedule, is stamped.
    func time(atSystemTime systemTime: Int64) -> Int64
    /// CLOCK_MONOTONIC's reading at the instant this clock reads `time`.
    func systemTime(at time: Int64) -> Int64
}

extension MonotonicClock {
    /// A clock that is CLOCK_MONOTONIC itself (or stands in for it in a test) converts nothing.
    public func time(atSystemTime systemTime: Int64) -> Int64 { systemTime }
    public func systemTime(at time: Int64) -> Int64 { time }
}

/// `clock_gettime(CLOCK_MONOTONIC)`: the clock V4L2 buffer timestamps use
/// (`V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC`), so camera and agent times need no conversion.
public struct SystemMonotonicClock: MonotonicClock {
    public init() {}

    public func now() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    public func sleep(until deadline: Int64) {
        // clock_nanosleep with TIMER_ABSTIME does not accumulate the error of relative
        // sleeps, so pacing over hours stays exact.
        var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
    }
}

/// A clock for tests: time moves only when the test says so.
///
/// In `autoAdvance` mode, `sleep(until:)` jumps the clock to the deadline at once (a
/// paced source then runs as fast as possible but sees exactly the times it would
/// see in real time). Otherwise sleepers block until ``advance(by:)`` or ``set(_:)``
/// moves time past their deadline. Every deadline asked for is recorded, so a test can
/// check the pacing schedule without measuring anything.
final class ManualClock: MonotonicClock, @unchecked Sendable {
    private let condition = NSCondition()
    private var current: Int64
    private var autoAdvance: Bool
    private var stepPerRead: Int64
    private var recordedDeadlines: [Int64] = []
    private var sleeping = 0

    /// - Parameters:
    ///   - start: the initial time in nanoseconds.
    ///   - autoAdvance: sleeping jumps the clock to the deadline instead of blocking.
    ///   - stepPerRead: added to the time after every `now()` (simulates time passing
    ///     between reads of a device that itself does not block, such as ALSA `null`).
    init(start: Int64 = 1_000_000_000, autoAdvance: Bool = false, stepPerRead: Int64 = 0) {
        self.current = start
        self.autoAdvance = autoAdvance
        self.stepPerRead = stepPerRead
    }

    func now() -> Int64 {
        condition.lock()
        defer { condition.unlock() }
        let t = current
        current += stepPerRead
        return t
    }

    func sleep(until deadline: Int64) {
        condition.lock()
        defer { condition.unlock() }
        recordedDeadlines.append(deadline)
        if autoAdvance {
            current = max(current, deadline)
            return
        }
        sleeping += 1
        condition.broadcast()
        while current < deadline { condition.wait() }
        sleeping -= 1
    }

    /// Moves time forward and wakes every sleeper whose deadline has passed.
    func advance(by nanoseconds: Int64) {
        condition.lock()
        current += nanoseconds
        condition.broadcast()
        condition.unlock()
    }

    /// Sets the time (never backwards).
    func set(_ time: Int64) {
        condition.lock()
        current = max(current, time)
        condition.broadcast()
        condition.unlock()
    }

    /// Every deadline passed to `sleep(until:)`, in call order.
    var deadlines: [Int64] {
        condition.lock()
        defer { condition.unlock() }
        return recordedDeadlines
    }

    /// Blocks until at least `count` threads are sleeping on this clock (so that a test
    /// can advance time knowing where the sleepers are).
    func waitForSleepers(_ count: Int) {
        condition.lock()
        defer { condition.unlock() }
        while sleeping < count { condition.wait() }
    }
}

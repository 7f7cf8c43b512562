/// Delays between reconnection attempts: exponential with "equal jitter".
///
/// Attempt `n` (from 0) has a ceiling `min(maximum, initial · 2ⁿ)`; the delay is half the
/// ceiling plus a uniformly random part of the other half. The fixed half keeps a
/// minimum spacing; the random half spreads a fleet of agents that lost the same server
/// so they do not all come back in the same instant. The generator is injected so tests
/// can pin the schedule.
public struct ReconnectBackoff: Sendable, Equatable {
    /// Nanoseconds.
    public var initial: Int64
    public var maximum: Int64
    public private(set) var attempt: Int = 0

    public init(initial: Int64 = 250_000_000, maximum: Int64 = 10_000_000_000) {
        self.initial = max(1, initial)
        self.maximum = max(self.initial, maximum)
    }

    /// The current ceiling (before jitter).
    public var ceiling: Int64 {
        let shift = min(attempt, 62)
        let (value, overflow) = initial.multipliedReportingOverflow(by: Int64(1) << shift)
        return overflow ? maximum : min(maximum, value)
    }

    /// The delay before the next attempt; each call counts an attempt.
    mutating func nextDelay(using random: inout some RandomNumberGenerator) -> Int64 {
        let c = ceiling
        attempt += 1
        let half = c / 2
        // One draw, mapped to [0, 1) from its top 53 bits: no rejection loop, so a
        // scripted generator gives an exact, predictable schedule.
        let fraction = Double(random.next() >> 11) / Double(UInt64(1) << 53)
        return half + Int64((Double(c - half) * fraction).rounded())
    }

    /// A connection worked: start again from `initial`.
    public mutating func reset() { attempt = 0 }
}

/// Sums a repeating event and lets it be logged at most once per `interval`.
///
/// A source that keeps losing frames (an overloaded encoder, an unclocked device) would
/// otherwise write one warning per frame: thousands of lines a second that bury everything
/// else in the journal. The first event is logged at once; later ones are summed and logged
/// with their total once the interval has passed, and ``flush()`` hands out what is left.
/// The drop *reports* to the server are not throttled; only the log lines are.
struct LogThrottle: Sendable {
    let interval: Int64
    private var lastLogged: Int64?
    private var pending = 0

    init(interval: Int64 = 5_000_000_000) {
        self.interval = interval
    }

    /// Counts `count` events at `now`; returns the total to log now, or nil to stay quiet.
    mutating func record(_ count: Int, at now: Int64) -> Int? {
        pending += count
        if let last = lastLogged, now - last < interval { return nil }
        lastLogged = now
        defer { pending = 0 }
        return pending
    }

    /// Whatever was counted but not logged yet (nil when nothing).
    mutating func flush() -> Int? {
        defer { pending = 0 }
        return pending > 0 ? pending : nil
    }
}

/// The time the server's session timers run on: when a detached or dormant session's resume
/// window ends, and the housekeeping tick that finishes it. The continuous clock in production;
/// tests inject a manual one and move it, so a resume window passes without the test waiting.
public protocol ServerClock: Sendable {
    var now: ContinuousClock.Instant { get }
    /// Suspends the caller until `duration` has passed on this clock.
    func sleep(for duration: Duration) async throws
}

/// The machine's monotonic clock (CLOCK_MONOTONIC via `ContinuousClock`).
public struct SystemServerClock: ServerClock {
    public init() {}
    public var now: ContinuousClock.Instant { .now }
    public func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }
}

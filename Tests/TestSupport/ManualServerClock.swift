import NIOConcurrencyHelpers
import RecordServerCore

/// A ``ServerClock`` whose `now` moves only when the test says (``advance(by:)``): a resume
/// window of minutes passes at once, and a session's deadline is exactly where the test puts it.
/// `sleep` still waits in real time, so the server's housekeeping keeps ticking and stops on
/// shutdown as it does in production; what a tick decides depends on `now` alone.
public final class ManualServerClock: ServerClock {
    private let offset = NIOLockedValueBox(Duration.zero)
    private let start = ContinuousClock.now

    public init() {}

    public var now: ContinuousClock.Instant { start + offset.withLockedValue { $0 } }

    public func advance(by duration: Duration) { offset.withLockedValue { $0 += duration } }

    public func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }
}

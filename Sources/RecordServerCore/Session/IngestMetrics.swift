import Shared

/// The figures ingest reports. `ServerMetrics` implements it with swift-metrics/Prometheus;
/// tests may pass `NoMetrics`.
protocol IngestMetrics: Sendable {
    func connectionOpened()
    func connectionClosed()
    func connectionRefused(reason: String)
    /// A peer hit one of the server's budgets (protocol.md §9): `sessions`, `agent_sessions`,
    /// `pre_authentication`, `hello_deadline`, `partial_frames`, `frame_deadline`.
    func budgetRefused(_ budget: String)
    func sessionStarted()
    func sessionEnded(outcome: RecordingStatus)
    func sampleIngested(kind: String, bytes: Int)
    func fragmentWritten(bytes: Int, write: Duration, sync: Duration)
    func ackSent()
    func duplicateIgnored()
    func error(code: ProtocolError.Code)
    /// Media bytes received but not yet durable changed by `delta` (summed over sessions).
    func queueBytesChanged(by delta: Int)
    /// A catalog write (or read) failed; it was logged and is reconciled from the files.
    func catalogWriteFailed()
    /// An agent refused a start because a source cannot capture (`captureFailed`).
    func captureFailed()
    /// The clock model's latest estimate for an agent (docs/architecture.md, "Clock model").
    func agentClock(_ agentID: String, _ estimate: ClockEstimator.Estimate)
}

struct NoMetrics: IngestMetrics {
    init() {}
    func connectionOpened() {}
    func connectionClosed() {}
    func connectionRefused(reason: String) {}
    func budgetRefused(_ budget: String) {}
    func sessionStarted() {}
    func sessionEnded(outcome: RecordingStatus) {}
    func sampleIngested(kind: String, bytes: Int) {}
    func fragmentWritten(bytes: Int, write: Duration, sync: Duration) {}
    func ackSent() {}
    func duplicateIgnored() {}
    func error(code: ProtocolError.Code) {}
    func queueBytesChanged(by delta: Int) {}
    func catalogWriteFailed() {}
    func captureFailed() {}
    func agentClock(_ agentID: String, _ estimate: ClockEstimator.Estimate) {}
}

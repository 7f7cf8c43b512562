import Metrics
import Prometheus
import Shared

/// The server's metrics: one Prometheus registry, the swift-metrics factory that feeds it,
/// and typed handles for everything ingest, sessions and storage report.
///
/// ## Why the global `MetricsSystem` is not bootstrapped here
/// `MetricsSystem.bootstrap` may run once per process, and the test suite starts many servers
/// in one process, each of which must see only its own figures. So every handle here is made
/// against this instance's own ``factory`` (swift-metrics accepts an explicit factory), and
/// nothing global is touched. The `record-server` executable *may* additionally call
/// `MetricsSystem.bootstrap(metrics.factory)` once in `main` so that third-party libraries that
/// report through the global system land in the same `/metrics` page; that is the lead's call,
/// not this type's.
///
/// ## Why the handlers come from the registry
/// Each handle is a swift-metrics type (`Metrics.Counter`, `Metrics.Meter`, `Metrics.Timer`), so
/// callers never import Prometheus. The handler behind it is made by the registry directly
/// (rather than through `factory.makeCounter`) only so that each family carries a `# HELP` line.
///
/// Every method is thread-safe: the handlers lock internally.
public final class ServerMetrics: IngestMetrics, Sendable {
    /// Where every metric of this instance lives; ``exposition()`` renders it.
    let registry: PrometheusCollectorRegistry
    /// A swift-metrics factory writing into ``registry``, for code that wants to make its own
    /// metrics (or for `MetricsSystem.bootstrap` in `main`, see above).
    let factory: PrometheusMetricsFactory

    // MARK: Connections

    /// `recordserver_connections_open`: agent connections currently open (TCP accepted, not yet closed).
    let connectionsOpen: Metrics.Meter
    /// `recordserver_connections_accepted_total`: agent connections accepted at the TCP level.
    let connectionsAccepted: Metrics.Counter

    // MARK: Sessions

    /// `recordserver_sessions_live`: sessions currently open (recording, detached or finalizing).
    let sessionsLive: Metrics.Meter
    /// `recordserver_sessions_started_total`.
    let sessionsStarted: Metrics.Counter

    // MARK: Media

    /// `recordserver_fragments_written_total`: media fragments appended to recording files.
    let fragmentsWritten: Metrics.Counter
    /// `recordserver_fragment_bytes_written_total`: bytes of those fragments (boxes included).
    let fragmentBytesWritten: Metrics.Counter
    /// `recordserver_acks_sent_total`: acknowledgements sent to agents.
    let acksSent: Metrics.Counter
    /// `recordserver_duplicate_samples_ignored_total`: samples received again after a resume and dropped.
    let duplicateSamplesIgnored: Metrics.Counter

    // MARK: Storage

    /// `recordserver_fragment_write_seconds`: time to append one fragment to its file (histogram).
    let fragmentWriteLatency: Metrics.Timer
    /// `recordserver_fsync_seconds`: time of one `fsync` of a recording file (histogram).
    let fsyncLatency: Metrics.Timer
    /// `recordserver_queue_bytes`: media bytes received but not yet durable, over all sessions.
    let queueBytes: Metrics.Meter
    /// `recordserver_catalog_write_failures_total`: catalog writes that failed (see CatalogWrites).
    let catalogWriteFailures: Metrics.Counter
    /// `recordserver_capture_failures_total`: starts refused by an agent whose source cannot capture.
    let captureFailures: Metrics.Counter
    /// `recordserver_uploads_total`, `recordserver_upload_bytes_total`, `recordserver_upload_failures_total`,
    /// `recordserver_upload_seconds`: recordings copied to the object store (RecordingUploader).
    let uploads: Metrics.Counter
    let uploadBytes: Metrics.Counter
    let uploadFailures: Metrics.Counter
    let uploadLatency: Metrics.Timer
    let liveChunks: Metrics.Counter
    let liveBytes: Metrics.Counter
    let liveLag: Metrics.Timer

    // Labelled families. The label values that can occur are known up front (kinds, outcomes,
    // protocol codes), so their handles are made once here and looked up without locking.
    private let ingestedBytesByKind: [String: Metrics.Counter]
    private let ingestedSamplesByKind: [String: Metrics.Counter]
    private let sessionsEndedByOutcome: [RecordingStatus: Metrics.Counter]
    private let errorsByCode: [UInt16: Metrics.Counter]
    /// Codes a peer invents are folded into one series so a hostile agent cannot grow the page.
    private let errorsUnknownCode: Metrics.Counter
    private let budgetRefusals: [String: Metrics.Counter]
    /// The budgets of protocol.md §9, as `budget` label values.
    static let budgets = ["sessions", "agent_sessions", "pre_authentication", "hello_deadline", "partial_frames", "frame_deadline"]

    /// Media kinds with their own series; anything else is counted as `other`.
    static let mediaKinds = ["video", "audio", "other"]

    /// Metric names, in one place so the docs, the tests and the code agree.
    enum Name {
        static let connectionsOpen = "recordserver_connections_open"
        static let connectionsAccepted = "recordserver_connections_accepted_total"
        static let connectionsRefused = "recordserver_connections_refused_total"
        static let budgetRefusals = "recordserver_budget_refusals_total"
        static let sessionsLive = "recordserver_sessions_live"
        static let sessionsStarted = "recordserver_sessions_started_total"
        static let sessionsEnded = "recordserver_sessions_ended_total"
        static let ingestedBytes = "recordserver_ingested_bytes_total"
        static let ingestedSamples = "recordserver_ingested_samples_total"
        static let fragmentsWritten = "recordserver_fragments_written_total"
        static let fragmentBytesWritten = "recordserver_fragment_bytes_written_total"
        static let acksSent = "recordserver_acks_sent_total"
        static let protocolErrors = "recordserver_protocol_errors_total"
        static let duplicateSamplesIgnored = "recordserver_duplicate_samples_ignored_total"
        static let fragmentWriteSeconds = "recordserver_fragment_write_seconds"
        static let fsyncSeconds = "recordserver_fsync_seconds"
        static let queueBytes = "recordserver_queue_bytes"
        static let catalogWriteFailures = "recordserver_catalog_write_failures_total"
        static let captureFailures = "recordserver_capture_failures_total"
        static let uploads = "recordserver_uploads_total"
        static let uploadBytes = "recordserver_upload_bytes_total"
        static let uploadFailures = "recordserver_upload_failures_total"
        static let uploadSeconds = "recordserver_upload_seconds"
        static let liveChunks = "recordserver_live_chunks_total"
        static let liveBytes = "recordserver_live_bytes_total"
        static let liveLagSeconds = "recordserver_live_lag_seconds"
        static let agentClockOffset = "recordserver_agent_clock_offset_seconds"
        static let agentClockDrift = "recordserver_agent_clock_drift_ppm"
        static let agentClockUncertainty = "recordserver_agent_clock_uncertainty_seconds"
        static let agentMinRoundTrip = "recordserver_agent_min_round_trip_seconds"
    }

    /// Buckets for the storage latency histograms: a page-cache write takes well under a
    /// millisecond, an `fsync` on a busy disk can take seconds, so the range is wide.
    static let latencyBuckets: [Duration] = [
        .microseconds(100), .microseconds(250), .microseconds(500),
        .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25),
        .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
        .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
    ]

    /// Creates a fresh registry with every metric at zero (labelled series included, so a
    /// scrape shows them before the first event).
    init() {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = Self.latencyBuckets
        self.registry = registry
        self.factory = factory

        func counter(_ name: String, _ help: String, _ labels: [(String, String)] = []) -> Metrics.Counter {
            let handler = registry.makeCounter(descriptor: Self.descriptor(name, help), labels: labels)
            return Metrics.Counter(label: name, dimensions: labels, handler: handler, factory: factory)
        }
        func gauge(_ name: String, _ help: String) -> Metrics.Meter {
            let handler = registry.makeGauge(descriptor: Self.descriptor(name, help))
            return Metrics.Meter(label: name, dimensions: [], handler: handler, factory: factory)
        }
        func timer(_ name: String, _ help: String) -> Metrics.Timer {
            let handler = registry.makeDurationHistogram(
                descriptor: Self.descriptor(name, help), buckets: Self.latencyBuckets)
            return Metrics.Timer(label: name, dimensions: [], handler: handler, factory: factory)
        }

        connectionsOpen = gauge(Name.connectionsOpen, "Agent connections currently open.")
        connectionsAccepted = counter(Name.connectionsAccepted, "Agent connections accepted at the TCP level.")
        sessionsLive = gauge(Name.sessionsLive, "Recording sessions currently open.")
        sessionsStarted = counter(Name.sessionsStarted, "Recording sessions started.")
        fragmentsWritten = counter(Name.fragmentsWritten, "Media fragments appended to recording files.")
        fragmentBytesWritten = counter(Name.fragmentBytesWritten, "Bytes of media fragments appended to recording files.")
        acksSent = counter(Name.acksSent, "Acknowledgements sent to agents.")
        duplicateSamplesIgnored = counter(Name.duplicateSamplesIgnored,
                                          "Samples received again after a resume and ignored.")
        fragmentWriteLatency = timer(Name.fragmentWriteSeconds, "Time to append one fragment to its file.")
        fsyncLatency = timer(Name.fsyncSeconds, "Time of one fsync of a recording file.")
        queueBytes = gauge(Name.queueBytes, "Media bytes received but not yet durable.")
        catalogWriteFailures = counter(Name.catalogWriteFailures,
                                       "Catalog writes that failed (logged; the rows are reconciled from the files).")
        captureFailures = counter(Name.captureFailures,
                                  "Starts an agent refused because a camera or microphone could not capture (captureFailed).")
        uploads = counter(Name.uploads, "Recordings copied to the object store and verified.")
        uploadBytes = counter(Name.uploadBytes, "Bytes of recordings copied to the object store.")
        uploadFailures = counter(Name.uploadFailures, "Uploads to the object store that failed (tried again later).")
        uploadLatency = timer(Name.uploadSeconds, "Time to copy one recording to the object store and verify it.")
        liveChunks = counter(Name.liveChunks, "Pieces of recording sessions copied to the object store while they record.")
        liveBytes = counter(Name.liveBytes, "Bytes of recording sessions copied to the object store while they record.")
        liveLag = timer(Name.liveLagSeconds,
                        "For each copied piece, from its oldest fragment being durable on this host to the piece being stored: how far the copy lags.")

        var bytes: [String: Metrics.Counter] = [:]
        var samples: [String: Metrics.Counter] = [:]
        for kind in Self.mediaKinds {
            bytes[kind] = counter(Name.ingestedBytes, "Media payload bytes received, by track kind.", [("kind", kind)])
            samples[kind] = counter(Name.ingestedSamples, "Media samples received, by track kind.", [("kind", kind)])
        }
        ingestedBytesByKind = bytes
        ingestedSamplesByKind = samples

        var ended: [RecordingStatus: Metrics.Counter] = [:]
        for outcome in RecordingStatus.allCases {
            ended[outcome] = counter(Name.sessionsEnded, "Recording sessions ended, by outcome.",
                                     [("outcome", outcome.rawValue)])
        }
        sessionsEndedByOutcome = ended

        let errorsHelp = "Protocol errors sent or received, by error code."
        var errors: [UInt16: Metrics.Counter] = [:]
        for code in ProtocolError.Code.allDefined {
            errors[code.rawValue] = counter(Name.protocolErrors, errorsHelp, [("code", Self.codeLabel(code))])
        }
        errorsByCode = errors
        errorsUnknownCode = counter(Name.protocolErrors, errorsHelp, [("code", "unknown")])

        var refusals: [String: Metrics.Counter] = [:]
        for budget in Self.budgets {
            refusals[budget] = counter(Name.budgetRefusals, "Peers refused because they hit a server budget (protocol.md §9), by budget.",
                                       [("budget", budget)])
        }
        budgetRefusals = refusals

        // Refusal reasons are strings chosen by the ingest code; the common ones are made now so
        // they show as 0, others appear on first use (see `connectionRefused`).
        for reason in ["tls", "authentication", "capacity", "shutting_down"] {
            _ = counter(Name.connectionsRefused, "Agent connections refused, by reason.", [("reason", reason)])
        }
    }

    /// The Prometheus text exposition (format 0.0.4) of every metric, for `GET /metrics`.
    func exposition() -> String {
        registry.emitToString()
    }

    // MARK: Typed conveniences

    /// Counts media received on a track of the given kind (`video`/`audio`, anything else is `other`).
    func ingested(kind: String, samples: Int = 1, bytes: Int) {
        let key = ingestedBytesByKind[kind] == nil ? "other" : kind
        ingestedSamplesByKind[key]?.increment(by: samples)
        ingestedBytesByKind[key]?.increment(by: bytes)
    }

    /// Records how long appending one fragment took.
    func recordFragmentWrite(_ duration: Duration) {
        fragmentWriteLatency.recordNanoseconds(duration.nanoseconds)
    }

    /// Records how long one `fsync` took.
    func recordFsync(_ duration: Duration) {
        fsyncLatency.recordNanoseconds(duration.nanoseconds)
    }

    /// Sets the number of bytes waiting to become durable.
    func setQueueBytes(_ bytes: Int) {
        queueBytes.set(bytes)
    }

    func catalogWriteFailed() {
        catalogWriteFailures.increment()
    }

    func captureFailed() {
        captureFailures.increment()
    }

    func uploaded(bytes: Int64, seconds: Double) {
        uploads.increment()
        uploadBytes.increment(by: Int(bytes))
        uploadLatency.recordNanoseconds(Int64(seconds * 1e9))
    }

    /// A chunk of a recording session stored (``LiveShipper``): `lag` from its oldest
    /// fragment being durable here to now.
    func liveChunkShipped(bytes: Int, lag: Duration) {
        liveChunks.increment()
        liveBytes.increment(by: bytes)
        liveLag.recordNanoseconds(lag.nanoseconds)
    }

    func uploadFailed() {
        uploadFailures.increment()
    }

    /// One series per agent (agent ids are authenticated identities, so their number is the
    /// fleet's); each keeps the agent's latest estimate after it disconnects.
    func agentClock(_ agentID: String, _ estimate: ClockEstimator.Estimate) {
        let labels = [("agent", agentID)]
        func set(_ name: String, _ help: String, _ value: Double) {
            registry.makeGauge(descriptor: Self.descriptor(name, help), labels: labels).set(value)
        }
        set(Name.agentClockOffset, "The agent's monotonic clock minus the server's, as the clock model estimates it.", Double(estimate.offset) / 1e9)
        set(Name.agentClockDrift, "How much faster the agent's clock runs than the server's, parts per million.", estimate.driftPPM)
        set(Name.agentClockUncertainty, "One standard deviation of the clock offset estimate (path asymmetry not included).",
            Double(estimate.uncertainty) / 1e9)
        set(Name.agentMinRoundTrip, "The smallest heartbeat round trip the clock estimate rests on; half of it bounds the asymmetry error.",
            Double(estimate.roundTrip) / 1e9)
    }

    func queueBytesChanged(by delta: Int) {
        if delta > 0 { queueBytes.increment(by: Double(delta)) } else if delta < 0 { queueBytes.decrement(by: Double(-delta)) }
    }

    // MARK: IngestMetrics

    func connectionOpened() {
        connectionsAccepted.increment()
        connectionsOpen.increment()
    }

    func connectionClosed() {
        connectionsOpen.decrement()
    }

    /// Reasons are normalised to `[a-z0-9_]`, at most 32 characters, so a stray message
    /// cannot become a label value; the registry returns the existing series for a known reason.
    func connectionRefused(reason: String) {
        let label = Self.sanitizedLabel(reason)
        let handler = registry.makeCounter(
            descriptor: Self.descriptor(Name.connectionsRefused, "Agent connections refused, by reason."),
            labels: [("reason", label)])
        handler.increment(by: Int64(1))
    }

    func budgetRefused(_ budget: String) {
        budgetRefusals[budget]?.increment()
    }

    func sessionStarted() {
        sessionsStarted.increment()
        sessionsLive.increment()
    }

    func sessionEnded(outcome: RecordingStatus) {
        sessionsEndedByOutcome[outcome]?.increment()
        sessionsLive.decrement()
    }

    func sampleIngested(kind: String, bytes: Int) {
        ingested(kind: kind, samples: 1, bytes: bytes)
    }

    func fragmentWritten(bytes: Int, write: Duration, sync: Duration) {
        fragmentsWritten.increment()
        fragmentBytesWritten.increment(by: bytes)
        recordFragmentWrite(write)
        if sync > .zero { recordFsync(sync) }
    }

    func ackSent() {
        acksSent.increment()
    }

    func duplicateIgnored() {
        duplicateSamplesIgnored.increment()
    }

    func error(code: ProtocolError.Code) {
        (errorsByCode[code.rawValue] ?? errorsUnknownCode).increment()
    }

    // MARK: Helpers

    /// The full name is given as is (it already ends in its unit), so no separate unit part.
    static func descriptor(_ name: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
    }

    /// The label value of a protocol code: its name as protocol.md spells it (`storageFailure`).
    static func codeLabel(_ code: ProtocolError.Code) -> String {
        // `description` is "name(0xNNNN)"; the name alone is stable and readable.
        let description = code.description
        return description.firstIndex(of: "(").map { String(description[..<$0]) } ?? description
    }

    static func sanitizedLabel(_ raw: String) -> String {
        var out = ""
        for scalar in raw.lowercased().unicodeScalars.prefix(32) {
            switch scalar {
            case "a"..."z", "0"..."9", "_": out.unicodeScalars.append(scalar)
            default: out.append("_")
            }
        }
        return out.isEmpty ? "unspecified" : out
    }
}

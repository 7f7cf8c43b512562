import Metrics
import Prometheus

/// The figures of one webhook target. Made once per target at start-up
/// (``ServerMetrics/webhookMetrics(target:)``), so every series shows from the first scrape.
struct WebhookTargetMetrics: Sendable {
    /// What happened to a delivery attempt or a queued delivery: the `result` label.
    enum Result: String, Sendable, CaseIterable {
        /// The target answered 2xx.
        case delivered
        /// An attempt failed and another follows after the backoff.
        case retried
        /// The last attempt failed: given up.
        case failed
        /// Never attempted to the end: pushed out of a full queue, still queued (or waiting for
        /// a retry, or in flight) when the grace at the server's stop ran out, or published
        /// after the webhooks stopped taking events.
        case dropped
    }

    private let results: [Result: Metrics.Counter]
    private let depth: Metrics.Meter

    init(results: [Result: Metrics.Counter], depth: Metrics.Meter) {
        self.results = results
        self.depth = depth
    }

    func count(_ result: Result, by amount: Int = 1) {
        if amount > 0 { results[result]?.increment(by: amount) }
    }

    func setQueueDepth(_ value: Int) { depth.set(value) }
}

extension ServerMetrics.Name {
    static let webhookDeliveries = "recordserver_webhook_deliveries_total"
    static let webhookQueueDepth = "recordserver_webhook_queue_depth"
}

extension ServerMetrics {
    /// The series of the target that metrics call `target` (``WebhookTarget/label``).
    func webhookMetrics(target: String) -> WebhookTargetMetrics {
        var results: [WebhookTargetMetrics.Result: Metrics.Counter] = [:]
        for result in WebhookTargetMetrics.Result.allCases {
            let labels = [("target", target), ("result", result.rawValue)]
            let handler = registry.makeCounter(
                descriptor: Self.descriptor(Name.webhookDeliveries, "Webhook deliveries and attempts, by target and result."), labels: labels)
            results[result] = Metrics.Counter(label: Name.webhookDeliveries, dimensions: labels, handler: handler, factory: factory)
        }
        let labels = [("target", target)]
        let handler = registry.makeGauge(descriptor: Self.descriptor(Name.webhookQueueDepth, "Webhook deliveries waiting, by target."),
                                         labels: labels)
        let depth = Metrics.Meter(label: Name.webhookQueueDepth, dimensions: labels, handler: handler, factory: factory)
        return WebhookTargetMetrics(results: results, depth: depth)
    }
}

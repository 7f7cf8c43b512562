import AdminModels
import Foundation
import Logging

/// Posts server events to the configured webhook targets (docs/admin-api.md, "Webhooks").
/// Taking an event only queues it, once per target that wants its type (``WebhookQueue``), so
/// the registry and the sessions never wait for a webhook. Each target has its own worker,
/// which posts its queue in order, one delivery at a time, retrying a failed one with backoff
/// before the next: a target that hangs or fails delays its own deliveries only — never
/// another target's, never ingest — and past ``queueCapacity`` waiting ones loses the oldest.
final class WebhookDispatcher: ServerEventSink {
    /// Deliveries one target may have waiting; past this the oldest is dropped (and counted).
    static let queueCapacity = 1024
    /// Once the rest of the server has stopped, how long the workers go on delivering what is
    /// queued; what is left then (queued, or waiting for a retry) is dropped and counted.
    static let shutdownGrace: Duration = .seconds(2)

    /// One target with its queue and its figures.
    struct Lane: Sendable {
        let target: WebhookTarget
        let queue: WebhookQueue
        let metrics: WebhookTargetMetrics
    }

    let lanes: [Lane]
    let policy: WebhookRetryPolicy
    private let logger: Logger
    /// The backoff's wait: tests pass one that does not take real minutes.
    private let sleep: @Sendable (Duration) async throws -> Void

    init(targets: [WebhookTarget], metrics: ServerMetrics, policy: WebhookRetryPolicy = .standard,
                queueCapacity: Int = WebhookDispatcher.queueCapacity, logger: Logger,
                sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }) {
        lanes = targets.map { Lane(target: $0, queue: WebhookQueue(capacity: queueCapacity), metrics: metrics.webhookMetrics(target: $0.label)) }
        self.policy = policy
        self.logger = logger
        self.sleep = sleep
    }

    func accept(_ event: ServerEvent) {
        let wanting = lanes.filter { $0.target.wants(event.type) }
        guard !wanting.isEmpty else { return }
        let body = AdminJSON.encode(event)
        for lane in wanting {
            let offer = lane.queue.offer(WebhookDelivery(id: UUID().uuidString.lowercased(), type: event.type, body: body))
            switch offer {
            case .queued: break
            case .queuedDroppingOldest, .refused: lane.metrics.count(.dropped)
            }
            lane.metrics.setQueueDepth(lane.queue.depth)
        }
    }

    /// Delivers until `untilStopping` returns (the server begins to stop), then for at most
    /// ``shutdownGrace`` more; whatever is left is dropped and counted.
    func run(sender: any WebhookSender, untilStopping: @escaping @Sendable () async -> Void) async {
        await withTaskGroup(of: Bool.self) { group in
            for lane in lanes {
                group.addTask {
                    await self.work(lane, sender: sender)
                    return false
                }
            }
            group.addTask {
                await untilStopping()
                for lane in self.lanes { lane.queue.close() }
                // Cancelled (and so over at once) when every worker finished first.
                try? await Task.sleep(for: Self.shutdownGrace)
                return true
            }
            var working = lanes.count
            for await graceIsOver in group {
                if !graceIsOver { working -= 1 }
                if graceIsOver || working == 0 { break }
            }
            group.cancelAll()
        }
        for lane in lanes {
            lane.metrics.count(.dropped, by: lane.queue.removeAll())
            lane.metrics.setQueueDepth(0)
        }
    }

    private func work(_ lane: Lane, sender: any WebhookSender) async {
        while let delivery = await lane.queue.next() {
            lane.metrics.setQueueDepth(lane.queue.depth)
            await deliver(delivery, lane: lane, sender: sender)
        }
    }

    /// Attempts one delivery until it is delivered, given up, or the grace at shutdown ends.
    private func deliver(_ delivery: WebhookDelivery, lane: Lane, sender: any WebhookSender) async {
        var attempt = 1
        while true {
            let request = WebhookRequest(delivery: delivery, to: lane.target, at: Int64(Date().timeIntervalSince1970))
            let outcome = await sender.post(request, timeout: policy.requestTimeout)
            guard case .failed(let reason) = outcome else {
                lane.metrics.count(.delivered)
                return
            }
            if Task.isCancelled {
                lane.metrics.count(.dropped)
                return
            }
            guard attempt < policy.maxAttempts else {
                lane.metrics.count(.failed)
                logger.warning("webhook delivery given up", metadata: [
                    "target": "\(lane.target.label)", "event": "\(delivery.type.rawValue)", "delivery": "\(delivery.id)",
                    "attempts": "\(attempt)", "error": "\(reason)"])
                return
            }
            lane.metrics.count(.retried)
            logger.debug("webhook delivery failed; retrying", metadata: [
                "target": "\(lane.target.label)", "delivery": "\(delivery.id)", "attempt": "\(attempt)", "error": "\(reason)"])
            do { try await sleep(policy.delay(afterAttempt: attempt)) } catch {
                // The wait was cancelled: the grace at shutdown is over.
                lane.metrics.count(.dropped)
                return
            }
            attempt += 1
        }
    }
}

import NIOConcurrencyHelpers
import NIOCore

/// One target's waiting deliveries: at most `capacity`, the oldest dropped to make room, so
/// that offering never waits (the registry and the sessions publish from their own turns). One
/// reader, the target's worker, takes them in order.
final class WebhookQueue: Sendable {
    /// What became of an offer.
    enum Offer: Equatable {
        case queued
        /// Queued, and the oldest waiting delivery was dropped to make room.
        case queuedDroppingOldest
        /// The queue is closed (the server is stopping): not queued.
        case refused
    }

    private enum Reader {
        /// Nobody waits: deliveries collect.
        case busy
        /// The worker waits for the next delivery (nothing is queued).
        case waiting(CheckedContinuation<WebhookDelivery?, Never>)
        /// No more offers; the worker takes what is left, then nil.
        case closed
    }

    private struct State {
        var items = CircularBuffer<WebhookDelivery>()
        var reader = Reader.busy
    }

    let capacity: Int
    private let state = NIOLockedValueBox(State())

    init(capacity: Int) {
        precondition(capacity > 0, "a webhook queue holds at least one delivery")
        self.capacity = capacity
    }

    var depth: Int { state.withLockedValue { $0.items.count } }

    func offer(_ delivery: WebhookDelivery) -> Offer {
        let (waiter, offer): (CheckedContinuation<WebhookDelivery?, Never>?, Offer) = state.withLockedValue { state in
            switch state.reader {
            case .closed:
                return (nil, .refused)
            case .waiting(let continuation):
                state.reader = .busy
                return (continuation, .queued)
            case .busy:
                var offer = Offer.queued
                if state.items.count >= capacity {
                    state.items.removeFirst()
                    offer = .queuedDroppingOldest
                }
                state.items.append(delivery)
                return (nil, offer)
            }
        }
        // Resumed outside the lock: the worker may run at once.
        waiter?.resume(returning: delivery)
        return offer
    }

    /// The next delivery, waiting for one; nil once closed and empty, or once the task is
    /// cancelled (the server's grace for webhooks ran out), whatever is queued.
    func next() async -> WebhookDelivery? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<WebhookDelivery?, Never>) in
                let ready: WebhookDelivery?? = state.withLockedValue { state in
                    // Cancelled: what is left stays queued, for the dispatcher to count as dropped.
                    if Task.isCancelled { return .some(nil) }
                    if let first = state.items.popFirst() { return .some(first) }
                    if case .closed = state.reader { return .some(nil) }
                    state.reader = .waiting(continuation)
                    return .none
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            wake()
        }
    }

    /// No more offers: the worker takes what is left and then ends.
    func close() {
        let waiter: CheckedContinuation<WebhookDelivery?, Never>? = state.withLockedValue { state in
            defer { state.reader = .closed }
            if case .waiting(let continuation) = state.reader { return continuation }
            return nil
        }
        waiter?.resume(returning: nil)
    }

    /// Ends a wait in ``next()`` with nil (its task was cancelled).
    private func wake() {
        let waiter: CheckedContinuation<WebhookDelivery?, Never>? = state.withLockedValue { state in
            guard case .waiting(let continuation) = state.reader else { return nil }
            state.reader = .busy
            return continuation
        }
        waiter?.resume(returning: nil)
    }

    /// Empties the queue; returns how many deliveries it held.
    func removeAll() -> Int {
        state.withLockedValue { state in
            defer { state.items.removeAll() }
            return state.items.count
        }
    }
}

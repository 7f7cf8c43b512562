import AdminModels
import NIOConcurrencyHelpers

/// Takes server events without waiting: whatever it does with one (queue it for a webhook)
/// must not block, since the registry and the sessions publish from their own turns.
protocol ServerEventSink: Sendable {
    func accept(_ event: ServerEvent)
}

/// Fans server events out to the subscribers of `GET /v1/events` and to the sinks it was made
/// with (the webhooks). Publishing never waits: each subscriber has its own buffer of the
/// newest ``bufferedEvents`` events, and one that does not keep up loses the oldest — a slow or
/// stalled client never slows ingest; a sink only queues.
final class EventBroadcaster: Sendable {
    /// What a subscriber reads: an event, or a reminder that the stream is alive.
    enum Item: Sendable, Equatable {
        case event(ServerEvent)
        /// Sent every ``keepAliveInterval`` (by the server's housekeeping), so that a proxy
        /// with an idle timeout (nginx: 60 s) does not cut a quiet stream.
        case keepAlive
    }

    static let bufferedEvents = 256
    static let keepAliveInterval: Duration = .seconds(15)
    /// Each subscriber is an open HTTP response; more than this is refused (503).
    static let maxSubscribers = 64

    /// One subscriber's events, until ``finish()`` or the server's shutdown.
    final class Subscription: Sendable {
        let events: AsyncStream<Item>
        private let continuation: AsyncStream<Item>.Continuation

        fileprivate init(events: AsyncStream<Item>, continuation: AsyncStream<Item>.Continuation) {
            self.events = events
            self.continuation = continuation
        }

        /// Ends the stream: its reader leaves its loop, the response ends.
        func finish() { continuation.finish() }
    }

    private struct State {
        var subscribers: [UInt64: AsyncStream<Item>.Continuation] = [:]
        var next: UInt64 = 0
        var finished = false
    }

    private let state = NIOLockedValueBox(State())
    private let sinks: [any ServerEventSink]

    init(sinks: [any ServerEventSink] = []) {
        self.sinks = sinks
    }

    /// A new subscription, or nil when ``maxSubscribers`` are open or the server is stopping.
    func subscribe() -> Subscription? {
        let (stream, continuation) = AsyncStream.makeStream(of: Item.self, bufferingPolicy: .bufferingNewest(Self.bufferedEvents))
        let id: UInt64? = state.withLockedValue { state in
            guard !state.finished, state.subscribers.count < Self.maxSubscribers else { return nil }
            state.next += 1
            state.subscribers[state.next] = continuation
            return state.next
        }
        guard let id else { return nil }
        // A reader that goes away (its client disconnected) ends its stream: forget it.
        continuation.onTermination = { [weak self] _ in
            self?.state.withLockedValue { _ = $0.subscribers.removeValue(forKey: id) }
        }
        return Subscription(events: stream, continuation: continuation)
    }

    func publish(_ event: ServerEvent) {
        send(.event(event))
        for sink in sinks { sink.accept(event) }
    }

    func sendKeepAlive() { send(.keepAlive) }

    private func send(_ item: Item) {
        let subscribers = state.withLockedValue { Array($0.subscribers.values) }
        for subscriber in subscribers { subscriber.yield(item) }
    }

    var subscriberCount: Int { state.withLockedValue { $0.subscribers.count } }

    /// The server is stopping: every stream ends, and no new one starts. Sinks go on taking
    /// events (the webhooks stop with their own service, after ingest).
    func finishAll() {
        let subscribers = state.withLockedValue { state in
            state.finished = true
            return Array(state.subscribers.values)
        }
        for subscriber in subscribers { subscriber.finish() }
    }
}

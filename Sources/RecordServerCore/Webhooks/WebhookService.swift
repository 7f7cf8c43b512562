import AsyncHTTPClient
import ServiceLifecycle

/// Runs the webhook dispatcher with the server. First in the service group, so it stops last:
/// the events of the shutdown itself (agents going offline) are still delivered, within
/// ``WebhookDispatcher/shutdownGrace``.
struct WebhookService: Service {
    let dispatcher: WebhookDispatcher

    func run() async throws {
        let client = HTTPWebhookSender.makeClient(policy: dispatcher.policy)
        await dispatcher.run(sender: HTTPWebhookSender(client: client)) {
            // Returns when the server begins its graceful stop, or at once when this task is
            // cancelled (a throw that says only that): the stop begins either way.
            try? await gracefulShutdown()
        }
        // Every request has ended with the dispatcher; a failure to close idle connections
        // leaves nothing behind in a process that is stopping.
        try? await client.shutdown()
    }
}

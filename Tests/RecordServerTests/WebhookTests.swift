import AdminModels
import Foundation
import NIOConcurrencyHelpers
@testable import RecordServerCore
import Shared
import Testing
import TestSupport

/// Webhooks (issue 17): a real server and agent session posting to receivers in Python (whose
/// hmac checks every signature), retries against a receiver that fails first, and the bounded
/// queue. Nothing here waits for a time: each test waits for the outcome it checks.
@Suite("Webhooks", .serialized)
struct WebhookTests {
    static let secret = "webhook-secret-0123456789abcdef"

    /// A secret file as the server accepts it: only its owner may read it.
    static func writeSecret(in directory: String, _ secret: String = WebhookTests.secret) throws -> String {
        let path = directory + "/webhook.secret"
        try Data((secret + "\n").utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        return path
    }

    @Test(.timeLimit(.minutes(2)))
    func aSessionPostsSignedEventsWhileAHangingTargetHoldsOnlyItself() async throws {
        let fixture = try ServerFixture(prefix: "webhooks")
        let secretFile = try Self.writeSecret(in: fixture.directory)
        let hanging = try await WebhookReceiver.hanging(in: fixture.directory, name: "hanging")
        let receiver = try await WebhookReceiver.start(in: fixture.directory, name: "receiver", secretFile: secretFile)
        // The hanging target is first: were delivery shared, everything would wait behind it.
        fixture.configuration.webhooks = [.init(url: hanging.url, secretFile: secretFile),
                                          .init(url: receiver.url, secretFile: secretFile)]
        let port = try await fixture.start()

        let content = try SessionContent.make(sessionID: "s-hooks", seconds: 2)
        let agent = try await fixture.connectAgent("agent-1", port: port)
        _ = try await agent.open(content.open)
        for sample in content.samples { try await agent.send(.sample(sample)) }
        let closed = try await agent.close("s-hooks", finalSequence: UInt64(content.samples.count))
        #expect(closed.outcome == .finalized, "the recording finishes whatever the webhook targets do")
        await agent.disconnect()

        let expected: [ServerEvent.Kind] = [.agentOnline, .sessionStarted, .recordingFinished, .sessionEnded, .agentOffline]
        let requests = try await eventually("every event at the answering target") { () -> [WebhookReceiver.Request]? in
            let seen = receiver.requests
            return seen.count >= expected.count ? seen : nil
        }
        #expect(requests.map(\.event) == expected.map(\.rawValue), "\(receiver.log)")
        #expect(hanging.acceptedConnections >= 1, "the hanging target was tried (and holds its connection)")
        let events = try requests.map { try AdminJSON.decoder().decode(ServerEvent.self, from: Data($0.body.utf8)) }
        for (request, event) in zip(requests, events) {
            #expect(request.signatureValid, "Python's hmac rejects the signature of \(request.event ?? "?")")
            #expect(request.contentType == "application/json")
            #expect(event.type.rawValue == request.event && event.agentID == "agent-1")
            #expect(request.signature?.hasPrefix("sha256=") == true)
            // A Unix time in seconds, within a day of now (the receiver's replay check relies on it).
            let timestamp = try #require(request.timestamp.flatMap(Double.init))
            #expect(abs(timestamp - Date().timeIntervalSince1970) < 86_400)
        }
        #expect(Set(requests.compactMap(\.delivery)).count == requests.count, "each delivery has its own id")
        let finished = events[2]
        let rows = try fixture.recordings(session: "s-hooks")
        #expect(finished.sessionID == "s-hooks" && finished.status == "completed")
        #expect(rows.map(\.id) == [finished.recordingID], "the event names the catalog's recording")
        #expect(rows.first?.status == .completed && FileManager.default.fileExists(atPath: rows.first?.path ?? ""))
        #expect(events[3].status == "completed")

        // openssl, a second implementation, signs the same bytes to the same value.
        let first = requests[0]
        try Data("\(first.timestamp ?? "").\(first.body)".utf8).write(to: URL(fileURLWithPath: fixture.directory + "/signed"))
        let openssl = try await runToolOffPool("openssl", ["dgst", "-sha256", "-hmac", Self.secret, "-r", fixture.directory + "/signed"])
        #expect(openssl.stdoutText.split(separator: " ").first.map { "sha256=" + $0 } == first.signature)

        let page = try #require(fixture.server).metrics.exposition()
        let target = WebhookTarget.label(of: try #require(URL(string: receiver.url)))
        #expect(seriesValue(#"recordserver_webhook_deliveries_total{target="\#(target)",result="delivered"}"#, in: page) == 5, "\(page)")
        #expect(seriesValue(#"recordserver_webhook_queue_depth{target="\#(target)"}"#, in: page) == 0)

        await fixture.stop()
        await receiver.stop()
        await hanging.stop()
    }

    /// The events that come from elsewhere than a session's own end: an agent's capture
    /// failure, and a file finalized by recovery when a suspended session is not resumed after
    /// a restart. The receiver asked for these types only, and gets nothing else.
    @Test(.timeLimit(.minutes(2)))
    func aCaptureFailureAndARecoveryAfterARestartArePostedToAReceiverThatAskedForThem() async throws {
        let fixture = try ServerFixture(prefix: "webhooks-recovery", resumeWindowSeconds: 1)
        let secretFile = try Self.writeSecret(in: fixture.directory)
        let receiver = try await WebhookReceiver.start(in: fixture.directory, name: "receiver", secretFile: secretFile)
        let wanted: [ServerEvent.Kind] = [.agentCaptureFailed, .recordingRecovered, .sessionEnded]
        fixture.configuration.webhooks = [.init(url: receiver.url, secretFile: secretFile, events: wanted.map(\.rawValue))]
        let port = try await fixture.start()

        let agent = try await fixture.connectAgent("agent-1", port: port)
        let reason = "cannot open /dev/video0: No such device"
        try await agent.send(.error(ErrorReport(code: .captureFailed, scope: .session, message: reason)))
        let content = try SessionContent.make(sessionID: "s-recover", seconds: 3)
        _ = try await agent.open(content.open)
        for sample in content.samples { try await agent.send(.sample(sample)) }
        try await agent.send(.heartbeat(Heartbeat(nonce: 1, originTime: 0)))
        _ = try await agent.wait(for: "heartbeat reply") { _ in true }
        #expect(agent.highestAck > 0, "a fragment is durable, so recovery keeps the file")
        // A graceful stop suspends the session; after the restart nobody resumes it.
        await fixture.stop()
        await agent.disconnect()
        _ = try await fixture.start()

        let requests = try await eventually("the recovery's events") { () -> [WebhookReceiver.Request]? in
            let seen = receiver.requests
            return seen.count >= wanted.count ? seen : nil
        }
        #expect(requests.map(\.event) == wanted.map(\.rawValue), "\(receiver.log)")
        #expect(requests.allSatisfy { $0.signatureValid })
        let events = try requests.map { try AdminJSON.decoder().decode(ServerEvent.self, from: Data($0.body.utf8)) }
        #expect(events[0].agentID == "agent-1" && events[0].message == reason)
        let row = try #require(try fixture.recordings(session: "s-recover").first)
        #expect(row.status == .recovered)
        #expect(events[1].recordingID == row.id && events[1].status == "recovered" && events[1].sessionID == "s-recover")
        #expect(events[2].status == "recovered")
        await fixture.stop()
        #expect(receiver.requests.count == wanted.count, "no other type was posted: \(receiver.log)")
        await receiver.stop()
    }

    @Test(.timeLimit(.minutes(1)))
    func aTargetThatFailsFirstGetsTheEventAfterARetryAndOneThatAlwaysFailsIsGivenUp() async throws {
        let directory = try TemporaryDirectory(prefix: "webhook-retry")
        let secretFile = try Self.writeSecret(in: directory.path)
        let flaky = try await WebhookReceiver.start(in: directory.path, name: "flaky", secretFile: secretFile, answers: [500, 200])
        let broken = try await WebhookReceiver.start(in: directory.path, name: "broken", secretFile: secretFile, answers: [503])
        let metrics = ServerMetrics()
        let policy = WebhookRetryPolicy(baseDelay: .milliseconds(10), maxDelay: .milliseconds(40), maxAttempts: 3, requestTimeout: .seconds(10))
        let targets = [WebhookTarget(url: try #require(URL(string: flaky.url)), secret: Self.secret),
                       WebhookTarget(url: try #require(URL(string: broken.url)), secret: Self.secret)]
        let dispatcher = WebhookDispatcher(targets: targets, metrics: metrics, policy: policy, logger: ServerFixture.logger)
        let client = HTTPWebhookSender.makeClient(policy: policy)
        let (stop, stopper) = AsyncStream<Void>.makeStream()
        let running = Task { await dispatcher.run(sender: HTTPWebhookSender(client: client)) { for await _ in stop {} } }

        dispatcher.accept(ServerEvent(type: .sessionStarted, agentID: "cam-1", sessionID: "s-1"))
        let flakyRequests = try await eventually("the retry's success") { flaky.requests.count >= 2 ? flaky.requests : nil }
        let brokenRequests = try await eventually("every attempt at the broken target") {
            broken.requests.count >= policy.maxAttempts ? broken.requests : nil
        }
        stopper.finish()
        await running.value
        try await client.shutdown()

        #expect(flakyRequests.map(\.status) == [500, 200])
        #expect(flakyRequests.allSatisfy { $0.signatureValid })
        #expect(flakyRequests[0].delivery == flakyRequests[1].delivery, "a retry is the same delivery")
        #expect(flakyRequests[0].body == flakyRequests[1].body)
        #expect(brokenRequests.count == policy.maxAttempts, "no attempt past the last")
        let page = metrics.exposition()
        func count(_ receiver: WebhookReceiver, _ result: String) throws -> Double? {
            let target = WebhookTarget.label(of: try #require(URL(string: receiver.url)))
            return seriesValue(#"recordserver_webhook_deliveries_total{target="\#(target)",result="\#(result)"}"#, in: page)
        }
        #expect(try count(flaky, "retried") == 1 && count(flaky, "delivered") == 1 && count(flaky, "failed") == 0, "\(page)")
        #expect(try count(broken, "retried") == 2 && count(broken, "failed") == 1 && count(broken, "delivered") == 0, "\(page)")
        await flaky.stop()
        await broken.stop()
    }

    /// Posts nothing and answers nothing until cancelled: a target that hangs.
    struct StuckSender: WebhookSender {
        private let counter = NIOLockedValueBox(0)
        var attempts: Int { counter.withLockedValue { $0 } }
        func post(_ request: WebhookRequest, timeout: Duration) async -> WebhookAttemptOutcome {
            counter.withLockedValue { $0 += 1 }
            // Cancelled at the end of the dispatcher's grace; the outcome is the same either way.
            try? await Task.sleep(for: .seconds(3600))
            return .failed("cancelled")
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func aFullQueueDropsTheOldestAndStoppingDropsWhatIsLeft() async throws {
        let metrics = ServerMetrics()
        let target = WebhookTarget(url: try #require(URL(string: "http://127.0.0.1:9/hook")), secret: Self.secret)
        let dispatcher = WebhookDispatcher(targets: [target], metrics: metrics, queueCapacity: 4, logger: ServerFixture.logger)
        let sender = StuckSender()
        let (stop, stopper) = AsyncStream<Void>.makeStream()
        let running = Task { await dispatcher.run(sender: sender) { for await _ in stop {} } }

        dispatcher.accept(ServerEvent(type: .agentOnline, agentID: "cam-0"))
        _ = try await eventually("the first delivery in flight") { sender.attempts == 1 ? true : nil }
        // Publishing returns at once although the target hangs; past 4 waiting, the oldest go.
        for n in 1 ... 9 { dispatcher.accept(ServerEvent(type: .agentOnline, agentID: "cam-\(n)")) }
        let queue = try #require(dispatcher.lanes.first?.queue)
        #expect(queue.depth == 4)
        let page = metrics.exposition()
        #expect(seriesValue(#"recordserver_webhook_deliveries_total{target="\#(target.label)",result="dropped"}"#, in: page) == 5)
        #expect(seriesValue(#"recordserver_webhook_queue_depth{target="\#(target.label)"}"#, in: page) == 4)

        stopper.finish()
        await running.value
        let after = metrics.exposition()
        // The one in flight and the four waiting are dropped when the grace ends: ten in all.
        #expect(seriesValue(#"recordserver_webhook_deliveries_total{target="\#(target.label)",result="dropped"}"#, in: after) == 10)
        #expect(seriesValue(#"recordserver_webhook_deliveries_total{target="\#(target.label)",result="delivered"}"#, in: after) == 0)
        #expect(seriesValue(#"recordserver_webhook_queue_depth{target="\#(target.label)"}"#, in: after) == 0)
        #expect(sender.attempts == 1)
    }

    @Test func theQueueKeepsTheNewestInOrder() async throws {
        let queue = WebhookQueue(capacity: 3)
        let offers = (1 ... 5).map { queue.offer(WebhookDelivery(id: "d\($0)", type: .agentOnline, body: Data())) }
        #expect(offers == [.queued, .queued, .queued, .queuedDroppingOldest, .queuedDroppingOldest])
        queue.close()
        #expect(queue.offer(WebhookDelivery(id: "late", type: .agentOnline, body: Data())) == .refused)
        var taken: [String] = []
        while let delivery = await queue.next() { taken.append(delivery.id) }
        #expect(taken == ["d3", "d4", "d5"])
    }

    @Test func theBackoffDoublesUpToItsCap() {
        let policy = WebhookRetryPolicy.standard
        #expect((1 ... 8).map { policy.delay(afterAttempt: $0) }
                == [1, 2, 4, 8, 16, 32, 60, 60].map { Duration.seconds($0) })
    }
}

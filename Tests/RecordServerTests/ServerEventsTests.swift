import AdminModels
import Foundation
@testable import RecordServerCore
import Shared
import Testing
import TestSupport

/// `GET /v1/events` (issue 17's events, first part): a real server, a real agent connection
/// and session, and curl (a client we did not write) reading the server-sent events.
@Suite("Server-sent events", .serialized)
struct ServerEventsTests {
    @Test(.timeLimit(.minutes(2)))
    func agentAndSessionEventsArriveInOrderAndTheStreamEndsWithTheServer() async throws {
        let fixture = try ServerFixture()
        let port = try await fixture.start()
        let log = fixture.directory + "/events.log"
        let curl = try ChildProcess("/usr/bin/curl", ["-sN", "-H", "Authorization: Bearer \(ServerFixture.adminToken)",
                                                      fixture.adminURL + "/v1/events"], logPath: log)
        _ = try await eventually("the stream to open") { curl.log.contains(": record-server events") ? true : nil }

        let content = try SessionContent.make(sessionID: "s-events", seconds: 2)
        let agent = try await fixture.connectAgent("agent-1", port: port)
        _ = try await agent.open(content.open)
        for sample in content.samples { try await agent.send(.sample(sample)) }
        let closed = try await agent.close("s-events", finalSequence: UInt64(content.samples.count))
        #expect(closed.outcome == .finalized)
        await agent.disconnect()

        let events = try await eventually("five events") { () -> [ServerEvent]? in
            let parsed = Self.events(in: curl.log)
            return parsed.count >= 5 ? parsed : nil
        }
        #expect(events.map(\.type) == [.agentOnline, .sessionStarted, .recordingFinished, .sessionEnded, .agentOffline], "\(curl.log)")
        #expect(events.allSatisfy { $0.agentID == "agent-1" })
        #expect(events[1].sessionID == "s-events" && events[2].sessionID == "s-events" && events[3].sessionID == "s-events")
        #expect(events[2].recordingID == "s-events-0001" && events[2].status == "completed")
        #expect(events[3].status == "completed")
        // Each SSE `event:` field names the same type as its data.
        #expect(curl.log.components(separatedBy: "\n").filter { $0.hasPrefix("event: ") }
                == events.map { "event: \($0.type.rawValue)" })

        // A graceful stop ends the open stream instead of waiting for it: curl sees the end.
        await fixture.stop()
        #expect(try await curl.waitForExit(within: .seconds(20)) == 0, "curl did not see the stream end")
    }

    @Test func theStreamNeedsTheTokenAndIsBoundedInSubscribers() async throws {
        let broadcaster = EventBroadcaster()
        let subscriptions = (0 ..< EventBroadcaster.maxSubscribers).compactMap { _ in broadcaster.subscribe() }
        #expect(subscriptions.count == EventBroadcaster.maxSubscribers)
        #expect(broadcaster.subscribe() == nil, "one more than the limit is refused")
        // A subscriber that reads nothing keeps only the newest events; publishing never waits.
        for n in 0 ..< 3 * EventBroadcaster.bufferedEvents {
            broadcaster.publish(ServerEvent(type: .agentOnline, agentID: "agent-\(n)"))
        }
        subscriptions[0].finish()
        var kept: [String] = []
        for await item in subscriptions[0].events { if case .event(let event) = item { kept.append(event.agentID) } }
        #expect(kept.count == EventBroadcaster.bufferedEvents)
        #expect(kept.last == "agent-\(3 * EventBroadcaster.bufferedEvents - 1)")
        // A finished subscription frees its place.
        #expect(broadcaster.subscriberCount == EventBroadcaster.maxSubscribers - 1)
        #expect(broadcaster.subscribe() != nil)

        let fixture = try ServerFixture()
        _ = try await fixture.start()
        let anonymous = try await runToolOffPool("curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", fixture.adminURL + "/v1/events"])
        #expect(anonymous.stdoutText == "401")
        await fixture.stop()
    }

    /// The `data:` lines of an SSE stream, decoded.
    private static func events(in stream: String) -> [ServerEvent] {
        stream.components(separatedBy: "\n").filter { $0.hasPrefix("data: ") }.compactMap { line in
            // The file is read while curl writes it: a line cut short is read whole at the next poll.
            try? AdminJSON.decoder().decode(ServerEvent.self, from: Data(line.dropFirst(6).utf8))
        }
    }

    /// The route's side of keep-alives (the server's housekeeping sends one every 15 s): a
    /// comment line between events, which EventSource clients skip.
    @Test func keepAlivesAreCommentsBetweenEvents() async throws {
        let backend = FakeAdminBackend()
        try await withAdminServer(backend: backend) { client in
            let directory = try TemporaryDirectory(prefix: "events")
            let log = directory.path + "/events.log"
            let curl = try ChildProcess("/usr/bin/curl", ["-sN", "-H", "Authorization: Bearer \(adminToken)",
                                                          "http://127.0.0.1:\(client.port)/v1/events"], logPath: log)
                _ = try await eventually("the stream to open") { curl.log.contains(": record-server events") ? true : nil }
            backend.broadcaster.sendKeepAlive()
            backend.broadcaster.publish(ServerEvent(type: .agentOnline, agentID: "cam-1"))
            let text = try await eventually("the event after the keep-alive") { curl.log.contains("event: agent.online") ? curl.log : nil }
            #expect(text.hasPrefix(": record-server events\n\n: keep-alive\n\nevent: agent.online\ndata: {"), "\(text)")
            backend.broadcaster.finishAll()
            #expect(try await curl.waitForExit(within: .seconds(20)) == 0)
        }
    }
}

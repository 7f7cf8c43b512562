import Foundation
@testable import RecordServerCore
import Shared
import Testing
import TestSupport

/// One record-server per data directory (issue 13, finding 1): a second one started by hand on
/// the same directory must not touch the first one's live recordings.
@Suite("Data directory lock", .serialized)
struct DataDirectoryLockTests {
    @Test("a second server on the same data directory exits 64 naming the directory and the holder's pid; the first one's recording completes")
    func secondServerRefusesToStart() async throws {
        let fixture = try ServerFixture()
        let first = try ServerProcess(fixture: fixture)
        try first.start()
        try await first.waitUntilListening()
        let content = try SessionContent.make(sessionID: "s-locked", seconds: 3)
        let agent = try await fixture.connectAgent("agent-1", port: first.port)
        _ = try await agent.open(content.open)
        let half = content.samples.count / 2
        for sample in content.samples.prefix(half) { try await agent.send(.sample(sample)) }

        // The same configuration on other ports, as an operator trying a setting by hand.
        let second = try ServerProcess(fixture: fixture, name: "second")
        try second.start()
        #expect(try await second.waitForExit() == 64)
        #expect(second.log.contains(fixture.configuration.dataDirectory), "\(second.log)")
        #expect(second.log.contains("pid \(first.pid)"), "\(second.log)")
        #expect(!second.log.contains("unfinished session"), "it must not have looked at the sessions")

        for sample in content.samples.dropFirst(half) { try await agent.send(.sample(sample)) }
        let closed = try await agent.close("s-locked", finalSequence: UInt64(content.samples.count))
        #expect(closed.durableSequence == UInt64(content.samples.count))
        await agent.disconnect()
        first.terminate()
        let recording = try #require(try fixture.recordings(session: "s-locked").first)
        #expect(recording.status == .completed)
        try IngestTests().assertFile(recording.path, content: content)
    }

    @Test func theLockIsReleasedWhenTheServerStopsSoARestartWorks() async throws {
        let fixture = try ServerFixture()
        _ = try await fixture.start()
        #expect(throws: DataDirectoryLock.Failure.inUse(directory: fixture.configuration.dataDirectory, pid: getpid())) {
            _ = try RecordServer(configuration: fixture.configuration, logger: ServerFixture.logger)
        }
        #expect(DataDirectoryLock.holder(ofFileIn: fixture.configuration.dataDirectory + "/recordings/x.mp4") == .some(getpid()))
        await fixture.stop()
        #expect(DataDirectoryLock.holder(ofFileIn: fixture.configuration.dataDirectory + "/recordings/x.mp4") == nil)
        _ = try await fixture.start()
        await fixture.stop()
    }
}

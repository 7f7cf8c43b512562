import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
@testable import RecordServerCore
import Testing
import TestSupport

/// An actor on its own ``StorageExecutor``, as a `RecordingSession` is.
private actor BlockingWork {
    private nonisolated let executor = StorageExecutor()
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    private(set) var log: [Int] = []

    /// Blocks its thread (as fsync on a slow disk or SQLite's busy wait does) until `release`.
    func block(until release: DispatchSemaphore) {
        release.wait()
    }

    func append(_ value: Int) { log.append(value) }

    /// Whether this job runs on an event loop thread.
    func onEventLoop() -> Bool { MultiThreadedEventLoopGroup.currentEventLoop != nil }
}

/// Issue 16: fsync and SQLite ran on the event loop of the connection that called the session.
@Suite("The registry and retention run on storage threads, never on an event loop")
struct StorageExecutorTests {
    @Test func anActorCalledFromAnEventLoopTaskRunsOffTheLoop() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let work = BlockingWork()
        // The ingest path: a connection's task prefers its channel's event loop.
        let onLoop = await Task(executorPreference: EventLoopTaskExecutor(group.next())) {
            (MultiThreadedEventLoopGroup.currentEventLoop != nil, await work.onEventLoop())
        }.value
        try await group.shutdownGracefully()
        #expect(onLoop.0, "the calling task runs on the event loop")
        #expect(!onLoop.1, "the actor's job does not")
    }

    @Test(.timeLimit(.minutes(1)))
    func oneBlockedActorLeavesTheOthersAThread() async {
        let stuck = BlockingWork(), other = BlockingWork()
        let release = DispatchSemaphore(value: 0)
        async let blocked: Void = stuck.block(until: release)
        // If both ran on one thread, this would wait for the release that comes after it.
        await other.append(1)
        #expect(await other.log == [1])
        release.signal()
        await blocked
    }

    @Test func jobsOfOneActorRunOneAtATimeInOrder() async {
        let work = BlockingWork()
        for i in 0..<(3 * StorageExecutor.jobsPerTurn) { await work.append(i) }
        await withTaskGroup(of: Void.self) { group in
            for i in 0..<500 { group.addTask { await work.append(1000 + i) } }
        }
        let log = await work.log
        #expect(Array(log.prefix(3 * StorageExecutor.jobsPerTurn)) == Array(0..<(3 * StorageExecutor.jobsPerTurn)))
        #expect(log.count == 3 * StorageExecutor.jobsPerTurn + 500)
        #expect(Set(log.dropFirst(3 * StorageExecutor.jobsPerTurn)) == Set(1000..<1500))
    }

    /// The real registry and session code: the registry hangs in a catalog write (an agent's
    /// row, behind a database lock), called from a task on an event loop; a session, called
    /// from a task on the same loop, still gets its samples muxed and acknowledged. When the
    /// registry ran on its caller's event loop, its write ran there and held the loop.
    @Test(.timeLimit(.minutes(1)))
    func aRegistryHungOnTheCatalogDoesNotHoldUpASessionOnTheSameEventLoop() async throws {
        let temporary = try TemporaryDirectory(prefix: "storage-executor")
        let directory = temporary.path
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()

        let catalog = FlakyCatalog(try Catalog(path: directory + "/catalog.sqlite"))
        let entered = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let writeRanOnTheLoop = NIOLockedValueBox<Bool?>(nil)
        catalog.beforeAgentWrite = { agent in
            guard agent.id == "agent-locked" else { return }
            let onLoop = MultiThreadedEventLoopGroup.currentEventLoop != nil
            writeRanOnTheLoop.withLockedValue { $0 = onLoop }
            entered.signal()
            // Hang as a locked database would — but never on the loop: there it would hang
            // this test too, instead of failing it below.
            if !onLoop { release.wait() }
        }
        var settings = SessionSettings()
        settings.durability = .none
        let registry = SessionRegistry(catalog: catalog, settings: settings, maxSessions: 8, metrics: ServerMetrics(),
                                       logger: Logger(label: "storage-executor") { _ in SwiftLogNoOpLogHandler() },
                                       dataDirectory: directory) { _, id, _ in
            let dir = directory + "/" + id.value
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            return (dir, "recording")
        }
        let content = try SessionContent.make(sessionID: "s-free", seconds: 2)
        let session = (try await registry.openSession(content.open, agentID: "agent-1", connection: 1)).0

        let info = ConnectedAgentInfo(id: "agent-locked", address: "127.0.0.1", softwareVersion: "test", connectedAt: Date(), lastSeen: Date())
        let hung = Task(executorPreference: EventLoopTaskExecutor(loop)) {
            await registry.agentConnected(.init(connection: 2, info: info, send: { _ in }))
        }
        // Wait (on a thread meant for blocking) until the registry hangs in the write.
        try await NIOThreadPool.singleton.runIfActive { entered.wait() }
        let acknowledged = await Task(executorPreference: EventLoopTaskExecutor(loop)) {
            await session.append(content.samples[...]).acknowledged
        }.value
        release.signal()
        await hung.value
        try await group.shutdownGracefully()
        #expect(writeRanOnTheLoop.withLockedValue { $0 } == false, "the registry's catalog write ran on the event loop")
        #expect((acknowledged ?? 0) > 0, "the session acknowledged nothing while the registry hung")
    }
}

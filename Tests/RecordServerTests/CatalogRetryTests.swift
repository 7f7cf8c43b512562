import Foundation
import Logging
@testable import RecordServerCore
import Shared
import Testing
import TestSupport

/// A catalog whose writes fail while `failing` says so (a full disk, a locked database);
/// reads still work. Everything else is the real SQLite catalog.
final class FlakyCatalog: RecordingCatalog, @unchecked Sendable {
    enum Failing: Sendable {
        case none
        case allWrites
        /// Only a session row's update fails: the writes before it (its files' rows) succeed.
        case sessionUpdates
    }

    let real: Catalog
    private let lock = NSLock()
    private var failingNow = Failing.none
    var failing: Failing {
        get { lock.withLock { failingNow } }
        set { lock.withLock { failingNow = newValue } }
    }

    private var beforeAgentWriteHook: (@Sendable (AgentRecord) -> Void)?
    /// Called on the writer's thread before an agent's row is written: a test may block
    /// there, as a database lock would.
    var beforeAgentWrite: (@Sendable (AgentRecord) -> Void)? {
        get { lock.withLock { beforeAgentWriteHook } }
        set { lock.withLock { beforeAgentWriteHook = newValue } }
    }

    init(_ real: Catalog) { self.real = real }

    private func write<T>(sessionUpdate: Bool = false, _ body: () throws -> T) throws -> T {
        switch failing {
        case .allWrites: throw CatalogError(.queryFailed, "database or disk is full (test)")
        case .sessionUpdates where sessionUpdate: throw CatalogError(.queryFailed, "database is locked (test)")
        case .none, .sessionUpdates: return try body()
        }
    }

    func recordAgentSeen(_ agent: AgentRecord) throws {
        beforeAgentWrite?(agent)
        try write { try real.recordAgentSeen(agent) }
    }
    func agents() throws -> [AgentRecord] { try real.agents() }
    func insertSession(_ session: SessionRecord) throws { try write { try real.insertSession(session) } }
    func session(id: String) throws -> SessionRecord? { try real.session(id: id) }
    func updateSession(id: String, status: RecordingStatus, endedAt: Date?, error: String?, durableSequence: UInt64?) throws {
        try write(sessionUpdate: true) { try real.updateSession(id: id, status: status, endedAt: endedAt, error: error, durableSequence: durableSequence) }
    }
    func unfinishedSessions() throws -> [SessionRecord] { try real.unfinishedSessions() }
    func finishedSessionsWithStaleRows() throws -> [SessionRecord] { try real.finishedSessionsWithStaleRows() }
    func deleteSession(id: String) throws { try write { try real.deleteSession(id: id) } }
    func upsertRecording(_ recording: RecordingRecord) throws { try write { try real.upsertRecording(recording) } }
    func recording(id: String) throws -> RecordingRecord? { try real.recording(id: id) }
    func recordings(_ filter: RecordingFilter) throws -> [RecordingRecord] { try real.recordings(filter) }
    func recordings(sessionID: String) throws -> [RecordingRecord] { try real.recordings(sessionID: sessionID) }
    func deleteRecording(id: String) throws { try write { try real.deleteRecording(id: id) } }
    func upsertTrack(_ track: TrackRecord) throws { try write { try real.upsertTrack(track) } }
    func tracks(sessionID: String) throws -> [TrackRecord] { try real.tracks(sessionID: sessionID) }
    var serverID: String { real.serverID }
    var isShared: Bool { real.isShared }
    func recordingsAwaitingUpload(limit: Int) throws -> [RecordingRecord] { try real.recordingsAwaitingUpload(limit: limit) }
    func recordUpload(_ upload: UploadRecord) throws { try write { try real.recordUpload(upload) } }
    func upload(recordingID: String) throws -> UploadRecord? { try real.upload(recordingID: recordingID) }
    func deleteUpload(recordingID: String) throws { try write { try real.deleteUpload(recordingID: recordingID) } }
    func uploadsOfDeletedRecordings(limit: Int) throws -> [UploadRecord] { try real.uploadsOfDeletedRecordings(limit: limit) }
    func recordHeartbeat(_ server: ServerRecord) throws { try write { try real.recordHeartbeat(server) } }
    func servers() throws -> [ServerRecord] { try real.servers() }
    func claimSession(id: String, from owner: String?, leaseCutoff: Date, directory: String) throws -> Int? {
        try write { try real.claimSession(id: id, from: owner, leaseCutoff: leaseCutoff, directory: directory) }
    }
    func sessionEpoch(id: String) throws -> Int { try real.sessionEpoch(id: id) }
    func sessionsOfSilentServers(since cutoff: Date) throws -> [SessionRecord] { try real.sessionsOfSilentServers(since: cutoff) }
    func totalRecordingBytes() throws -> Int64 { try real.totalRecordingBytes() }
    func oldestFinishedRecordings(limit: Int, offset: Int) throws -> [RecordingRecord] {
        try real.oldestFinishedRecordings(limit: limit, offset: offset)
    }
}

/// Issue 13, finding 5: `try? catalog…` swallowed write failures, so a failed session's row
/// stayed `recording`, 0 B, until a restart. Now a failed write is counted, written again once
/// the session has finished (every sweep, until it succeeds), and reconciled at start-up.
@Suite("Catalog writes that fail are retried and reconciled", .serialized)
struct CatalogRetryTests {
    private func registry(_ catalog: any RecordingCatalog, directory: String, metrics: ServerMetrics) -> SessionRegistry {
        var settings = SessionSettings()
        settings.durability = .none
        return SessionRegistry(catalog: catalog, settings: settings, maxSessions: 8, metrics: metrics,
                               logger: Logger(label: "catalog-retry") { _ in SwiftLogNoOpLogHandler() }, dataDirectory: directory) { _, id, _ in
            let dir = directory + "/" + id.value
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            return (dir, "recording")
        }
    }

    /// A server records `content` and is shut down: its session is suspended, the file keeps
    /// its durable fragments and the catalog row says `recording`.
    private func recordThenShutDown(_ content: SessionContent, catalog: any RecordingCatalog, directory: String) async throws {
        let first = registry(catalog, directory: directory, metrics: ServerMetrics())
        let session = (try await first.openSession(content.open, agentID: "agent-1", connection: 1)).0
        _ = await session.append(content.samples[...])
        await first.shutdown()
    }

    private static func failures(_ metrics: ServerMetrics) -> Double {
        let line = metrics.exposition().split(separator: "\n").first { $0.hasPrefix("recordserver_catalog_write_failures_total ") }
        return line.flatMap { Double($0.split(separator: " ").last ?? "") } ?? .nan
    }

    @Test func aSessionFinishedWhileTheCatalogFailsIsWrittenAtTheNextSweep() async throws {
        let temporary = try TemporaryDirectory(prefix: "catalog-retry")
        let directory = temporary.path
        let catalog = FlakyCatalog(try Catalog(path: directory + "/catalog.sqlite"))
        let metrics = ServerMetrics()
        let registry = registry(catalog, directory: directory, metrics: metrics)
        let content = try SessionContent.make(sessionID: "s-flaky", seconds: 2)

        let session = (try await registry.openSession(content.open, agentID: "agent-1", connection: 1)).0
        _ = await session.append(content.samples[...])
        catalog.failing = .allWrites  // the disk fills up just before the close
        _ = try await session.close()
        await registry.sessionEnded(session)
        await session.reconcileCatalog()
        #expect(try catalog.real.session(id: "s-flaky")?.status == .recording, "the failed write left the row as it was")
        #expect(Self.failures(metrics) > 0, "every failed write is counted")
        #expect(await session.owesCatalog)

        await registry.sweep()  // still failing: nothing is lost, it is tried again later
        #expect(await session.owesCatalog)
        catalog.failing = .none
        await registry.sweep()
        #expect(await session.owesCatalog == false)

        let row = try #require(try catalog.real.session(id: "s-flaky"))
        #expect(row.status == .completed && row.durableSequence == UInt64(content.samples.count))
        let recording = try #require(try catalog.real.recordings(sessionID: "s-flaky").first)
        #expect(recording.status == .completed)
        try Oracle.expectCatalogMatchesFile(recording, tracks: try catalog.real.tracks(sessionID: "s-flaky"))
    }

    @Test func staleRowsLeftByAStoppedServerAreReconciledAtStartUp() async throws {
        let temporary = try TemporaryDirectory(prefix: "catalog-retry")
        let directory = temporary.path
        let real = try Catalog(path: directory + "/catalog.sqlite")
        let content = try SessionContent.make(sessionID: "s-stale", seconds: 2)
        do {
            let registry = registry(real, directory: directory, metrics: ServerMetrics())
            let session = (try await registry.openSession(content.open, agentID: "agent-1", connection: 1)).0
            _ = await session.append(content.samples[...])
            _ = try await session.close()
        }
        // What a server stopped between a failed write and its retry leaves: the session says
        // completed, its file and tracks still say recording / active with live counts.
        var recording = try #require(try real.recordings(sessionID: "s-stale").first)
        recording.status = .recording
        recording.sizeBytes = 0
        try real.upsertRecording(recording)
        for var track in try real.tracks(sessionID: "s-stale") {
            track.status = .active
            track.samples = 1
            try real.upsertTrack(track)
        }
        #expect(try real.finishedSessionsWithStaleRows().map(\.id) == ["s-stale"])

        let restarted = registry(real, directory: directory, metrics: ServerMetrics())
        await restarted.loadUnfinishedSessions()
        #expect(try real.finishedSessionsWithStaleRows().isEmpty)
        let fixed = try #require(try real.recordings(sessionID: "s-stale").first)
        #expect(fixed.status == .completed)
        try Oracle.expectCatalogMatchesFile(fixed, tracks: try real.tracks(sessionID: "s-stale"))
    }

    /// A session found unfinished after a restart and not resumed is finished by recovery —
    /// by the session itself, like every other ending — and a catalog that fails meanwhile is
    /// written at a later sweep, read back from the recovered file.
    @Test func aSessionRecoveredAfterARestartWhileTheCatalogFailsIsWrittenAtTheNextSweep() async throws {
        let temporary = try TemporaryDirectory(prefix: "catalog-retry")
        let directory = temporary.path
        let catalog = FlakyCatalog(try Catalog(path: directory + "/catalog.sqlite"))
        let content = try SessionContent.make(sessionID: "s-dormant", seconds: 3)
        try await recordThenShutDown(content, catalog: catalog, directory: directory)
        let metrics = ServerMetrics()
        let restarted = registry(catalog, directory: directory, metrics: metrics)
        await restarted.loadUnfinishedSessions()
        #expect(await restarted.liveSessions().map(\.state) == ["suspended"])
        #expect(await restarted.runningSessionID(of: "agent-1") == "s-dormant", "a start for its agent is refused while it waits")

        catalog.failing = .allWrites
        await restarted.sweep(now: .now + .seconds(3600))  // the resume window has passed
        #expect(await restarted.liveSessions().isEmpty, "finished, although its rows could not be written")
        #expect(try catalog.real.session(id: "s-dormant")?.status == .recording)
        #expect(Self.failures(metrics) > 0)

        catalog.failing = .none
        await restarted.sweep(now: .now + .seconds(3600))
        let row = try #require(try catalog.real.session(id: "s-dormant"))
        #expect(row.status == .recovered && row.error == nil)
        let recording = try #require(try catalog.real.recordings(sessionID: "s-dormant").first)
        #expect(recording.status == .recovered)
        try Oracle.expectCatalogMatchesFile(recording, tracks: try catalog.real.tracks(sessionID: "s-dormant"))
        #expect(try MP4Inspection.inspect(path: recording.path).layout.hasPrefix("progressive"), "recovery finalized the file")
    }

    /// The first attempt wrote the file's row (`failed`: its file could not be recovered) but
    /// not the session's. The retry writes what that attempt found, and does not recover the
    /// files again — which would find no file left `recording` and call the session
    /// `recovered`.
    @Test func aRecoveryThatFailedStaysFailedWhenItsSessionRowIsWrittenLater() async throws {
        let temporary = try TemporaryDirectory(prefix: "catalog-retry")
        let directory = temporary.path
        let catalog = FlakyCatalog(try Catalog(path: directory + "/catalog.sqlite"))
        let content = try SessionContent.make(sessionID: "s-lost", seconds: 2)
        try await recordThenShutDown(content, catalog: catalog, directory: directory)
        let file = try #require(try catalog.real.recordings(sessionID: "s-lost").first).path
        try FileManager.default.removeItem(atPath: file)  // lost while the server was down
        let restarted = registry(catalog, directory: directory, metrics: ServerMetrics())
        await restarted.loadUnfinishedSessions()

        catalog.failing = .sessionUpdates
        await restarted.sweep(now: .now + .seconds(3600))
        #expect(try catalog.real.recordings(sessionID: "s-lost").first?.status == .failed, "the file's row was written")
        #expect(try catalog.real.session(id: "s-lost")?.status == .recording, "the session's was not")

        catalog.failing = .none
        await restarted.sweep(now: .now + .seconds(3600))
        let row = try #require(try catalog.real.session(id: "s-lost"))
        #expect(row.status == .failed)
        #expect(row.error?.contains(file) == true, "the row names the file: \(row.error ?? "no error")")
    }

    /// Issue 13's chaos run, seed 8850: a session failed on a full disk before its first
    /// fragment became durable and could not delete its empty file's row (the same full disk);
    /// the server was killed before the retry. The file went first, so the restart found a row
    /// whose file was missing — which it cannot tell from a file lost with its media — and
    /// called the session failed with a row for a file that is not there. Now the row goes
    /// first: the file stays until its row is gone, and the restart removes both.
    @Test(.enabled(if: TinyFilesystem.canMount, "needs permission to mount a tmpfs"))
    func anEmptyFileGoesOnlyAfterItsRowEvenWhenTheServerDiesInBetween() async throws {
        let temporary = try TemporaryDirectory(prefix: "catalog-retry")
        let directory = temporary.path + "/data"
        let mount = try TinyFilesystem(path: directory, kilobytes: 1024)
        defer { mount.unmount() }
        let catalog = FlakyCatalog(try Catalog(path: temporary.path + "/catalog.sqlite"))
        let content = try SessionContent.make(sessionID: "s-empty", seconds: 3)
        let ballast = directory + "/ballast"
        do {
            // As in that run: opened, suspended by a restart and resumed, so its file has a row.
            let first = registry(catalog, directory: directory, metrics: ServerMetrics())
            _ = (try await first.openSession(content.open, agentID: "agent-1", connection: 1)).0
            await first.shutdown()
            let second = registry(catalog, directory: directory, metrics: ServerMetrics())
            await second.loadUnfinishedSessions()
            guard case .resumed(let session, _, _) = try await second.resumeSession(SessionID("s-empty"), agentID: "agent-1", connection: 2) else {
                Issue.record("the suspended session must resume")
                return
            }
            #expect(try catalog.real.recordings(sessionID: "s-empty").map(\.status) == [.recording])
            #expect(TinyFilesystem.fill(ballast) > 0)
            catalog.failing = .allWrites
            _ = await session.append(content.samples[...])
            #expect(await session.isFinished, "the first fragment's write failed: the session ended")
            let files = try FileManager.default.contentsOfDirectory(atPath: directory + "/s-empty").filter { $0.hasSuffix(".mp4") }
            #expect(files == ["recording.mp4"], "its row could not be deleted, so the empty file stays")
        }  // the server dies here: no shutdown, no catalog retry
        try FileManager.default.removeItem(atPath: ballast)
        catalog.failing = .none

        let restarted = registry(catalog, directory: directory, metrics: ServerMetrics())
        await restarted.loadUnfinishedSessions()
        await restarted.sweep(now: .now + .seconds(3600))  // the agent never came back
        #expect(try catalog.real.recordings(sessionID: "s-empty").isEmpty, "no row for a file that is not there")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory + "/s-empty").filter { $0.hasSuffix(".mp4") }.isEmpty)
        let row = try #require(try catalog.real.session(id: "s-empty"))
        #expect(row.status == .failed && row.error == "no fragment was ever durable: nothing was recorded", "\(row)")
    }
}

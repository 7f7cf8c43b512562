import Foundation
import GRDB
import Testing
@testable import RecordServerCore

/// The catalog's behaviour, the same on both backends: the embedded SQLite (in memory) and a
/// real PostgreSQL 15 (`TestPostgres`, a database per test). What only one backend has — the
/// SQLite file's mode and migrations of old files; PostgreSQL's connection and its migrations —
/// is tested below and in `PostgresCatalogTests`.
@Suite struct CatalogTests {
    // Whole and binary-fraction seconds: exact as Double, so dates compare equal after a round trip.
    private let t0 = Date(timeIntervalSince1970: 1_700_000_000)

    private func session(_ id: String, agent: String = "cam-1", status: RecordingStatus = .recording, at offset: Double = 0,
                         labels: [String: String] = [:]) -> SessionRecord {
        SessionRecord(id: id, agentID: agent, labels: labels, status: status, createdAt: t0.addingTimeInterval(offset),
                      directory: "/data/recordings/\(agent)/2023-11-14/\(id)")
    }

    private func recording(_ session: String, _ segment: Int = 1, agent: String = "cam-1", status: RecordingStatus = .completed,
                           at offset: Double = 0, size: Int64 = 100) -> RecordingRecord {
        RecordingRecord(id: "\(session)-\(segment)", sessionID: session, agentID: agent, segmentIndex: segment,
                        path: "/data/recordings/\(agent)/2023-11-14/\(session)/recording-\(segment).mp4", status: status,
                        sizeBytes: size, durationSeconds: 12.5, startSeconds: 0.25, createdAt: t0.addingTimeInterval(offset),
                        finishedAt: status == .recording ? nil : t0.addingTimeInterval(offset + 60), error: status == .failed ? "disk full" : nil)
    }

    @Test(arguments: CatalogBackend.allCases) func agentsAreUpsertedKeepingFirstAndLatestSighting(_ backend: CatalogBackend) async throws {
        let catalog = try await backend.makeCatalog()
        try catalog.recordAgentSeen(AgentRecord(id: "cam-2", lastAddress: "10.0.0.2:5000", softwareVersion: "0.1.0", firstSeen: t0, lastSeen: t0))
        try catalog.recordAgentSeen(AgentRecord(id: "cam-1", lastAddress: "10.0.0.1:5000", softwareVersion: "0.1.0",
                                                firstSeen: t0.addingTimeInterval(100), lastSeen: t0.addingTimeInterval(100)))
        try catalog.recordAgentSeen(AgentRecord(id: "cam-1", lastAddress: "10.0.0.9:6000", softwareVersion: "0.2.0",
                                                firstSeen: t0.addingTimeInterval(500), lastSeen: t0.addingTimeInterval(500)))
        let agents = try catalog.agents()
        #expect(agents.map(\.id) == ["cam-1", "cam-2"])
        #expect(agents[0] == AgentRecord(id: "cam-1", lastAddress: "10.0.0.9:6000", softwareVersion: "0.2.0",
                                         firstSeen: t0.addingTimeInterval(100), lastSeen: t0.addingTimeInterval(500)))
    }

    @Test(arguments: CatalogBackend.allCases) func sessionsRoundTripAndUpdate(_ backend: CatalogBackend) async throws {
        let catalog = try await backend.makeCatalog()
        var original = session("s1", labels: ["room": "A", "take": "3"])
        try catalog.insertSession(original)
        original.serverID = catalog.serverID  // stamped on insert
        #expect(try catalog.session(id: "s1") == original)
        #expect(try catalog.session(id: "missing") == nil)

        let end = t0.addingTimeInterval(3600.5)
        try catalog.updateSession(id: "s1", status: .failed, endedAt: end, error: "disk full")
        var expected = original
        expected.status = .failed
        expected.endedAt = end
        expected.error = "disk full"
        #expect(try catalog.session(id: "s1") == expected)
    }

    @Test(arguments: CatalogBackend.allCases) func duplicateSessionIsAConflictAndUnknownUpdateIsNotFound(_ backend: CatalogBackend) async throws {
        let catalog = try await backend.makeCatalog()
        try catalog.insertSession(session("s1"))
        let duplicate = #expect(throws: CatalogError.self) { try catalog.insertSession(session("s1")) }
        #expect(duplicate?.code == .conflict)
        #expect(duplicate?.message.contains("insert session s1") == true)
        let missing = #expect(throws: CatalogError.self) {
            try catalog.updateSession(id: "nope", status: .completed, endedAt: t0, error: nil)
        }
        #expect(missing?.code == .notFound)
    }

    @Test(arguments: CatalogBackend.allCases) func labelsRoundTripThroughJSON(_ backend: CatalogBackend) async throws {
        let catalog = try await backend.makeCatalog()
        let labels = ["": "empty key", "quote\"s": "back\\slash", "unicode": "Prüfung 🎥", "newline": "a\nb"]
        try catalog.insertSession(session("s1", labels: labels))
        try catalog.insertSession(session("s2"))
        #expect(try catalog.session(id: "s1")?.labels == labels)
        #expect(try catalog.session(id: "s2")?.labels == [:])
    }

    @Test(arguments: CatalogBackend.allCases) func unfinishedSessionsAreThoseStillRecordingOldestFirst(_ backend: CatalogBackend) async throws {
        let catalog = try await backend.makeCatalog()
        try catalog.insertSession(session("late", at: 50))
        try catalog.insertSession(session("done", status: .completed, at: 10))
        try catalog.insertSession(session("early", at: 5))
        try catalog.insertSession(session("gone", status: .interrupted, at: 1))
        #expect(try catalog.unfinishedSessions().map(\.id) == ["early", "late"])
        try catalog.updateSession(id: "early", status: .recovered, endedAt: t0, error: nil)
        #expect(try catalog.unfinishedSessions().map(\.id) == ["late"])
    }

    @Test(arguments: CatalogBackend.allCases) func serversSharingACatalogSeeOnlyTheirOwnUnfinishedSessions(_ backend: CatalogBackend) async throws {
        let (a, b, scratch) = try await backend.makeSharedCatalogs("server-a", "server-b")
        defer { _ = scratch }
        try a.insertSession(session("a-live", at: 1))
        try a.insertSession(session("a-done", status: .completed, at: 2))
        try b.insertSession(session("b-live", at: 3))
        try a.insertSession(SessionRecord(id: "explicit", agentID: "cam-1", labels: [:], status: .recording, createdAt: t0, directory: "/d",
                                          serverID: "server-b"))
        #expect(try a.session(id: "a-live")?.serverID == "server-a" && b.session(id: "b-live")?.serverID == "server-b")
        #expect(try a.unfinishedSessions().map(\.id) == ["a-live"])
        #expect(try b.unfinishedSessions().map(\.id) == ["explicit", "b-live"], "an explicit server id is kept")
        // A stale row (a file still `recording` under a finished session) is its own server's to mend.
        try b.updateSession(id: "b-live", status: .completed, endedAt: t0, error: nil)
        try b.upsertRecording(recording("b-live", status: .recording))
        #expect(try a.finishedSessionsWithStaleRows().isEmpty)
        #expect(try b.finishedSessionsWithStaleRows().map(\.id) == ["b-live"])

        let started = t0.addingTimeInterval(-60)
        try a.recordHeartbeat(ServerRecord(id: "server-a", ingestAddress: "10.0.0.1:7443", softwareVersion: "1.0", startedAt: started,
                                           heartbeatAt: t0, liveSessions: 1, connectedAgents: 2))
        try b.recordHeartbeat(ServerRecord(id: "server-b", ingestAddress: "10.0.0.2:7443", softwareVersion: "1.0", startedAt: started,
                                           heartbeatAt: t0, liveSessions: 0, connectedAgents: 0))
        let later = ServerRecord(id: "server-a", ingestAddress: "10.0.0.1:7443", softwareVersion: "1.1", startedAt: started,
                                 heartbeatAt: t0.addingTimeInterval(5), liveSessions: 3, connectedAgents: 4)
        try a.recordHeartbeat(later)
        #expect(try b.servers().map(\.id) == ["server-a", "server-b"])
        #expect(try b.servers().first == later)
    }

    @Test(arguments: CatalogBackend.allCases) func uploadsAreKeptApartFromTheRowsSessionsRewrite(_ backend: CatalogBackend) async throws {
        let (mine, other, scratch) = try await backend.makeSharedCatalogs("server-a", "server-b")
        defer { _ = scratch }
        for (catalog, id) in [(mine, "s1"), (mine, "s2"), (other, "s3")] {
            try catalog.insertSession(session(id, status: .completed))
        }
        try mine.upsertRecording(recording("s1", 2, at: 20))
        try mine.upsertRecording(recording("s1", 1, at: 20))
        try mine.upsertRecording(recording("s2", status: .recording, at: 10))
        try mine.upsertRecording(recording("s3", at: 0))
        #expect(try mine.recordingsAwaitingUpload(limit: 10).map(\.id) == ["s1-1", "s1-2"], "finished, this server's, oldest first")
        #expect(try mine.recordingsAwaitingUpload(limit: 1).map(\.id) == ["s1-1"])

        let upload = UploadRecord(recordingID: "s1-1", objectKey: "rec/cam-1/s1/recording-1.mp4", etag: "0123abcd-2", sizeBytes: 123_456_789_012,
                                  uploadedAt: t0.addingTimeInterval(61.5))
        try mine.recordUpload(upload)
        #expect(try mine.upload(recordingID: "s1-1") == upload)
        #expect(try other.upload(recordingID: "s1-1") == upload, "the fleet shares uploads")
        // A session rewriting its file's row leaves the upload alone.
        try mine.upsertRecording(recording("s1", 1, at: 20, size: 7))
        #expect(try mine.upload(recordingID: "s1-1") == upload)
        #expect(try mine.recordingsAwaitingUpload(limit: 10).map(\.id) == ["s1-2"])
        var removed = upload
        removed.localRemoved = true
        try mine.recordUpload(removed)
        #expect(try mine.upload(recordingID: "s1-1")?.localRemoved == true)
        #expect(try mine.uploadsOfDeletedRecordings(limit: 10) == [], "its recording is still listed")
        try mine.deleteRecording(id: "s1-1")
        #expect(try other.uploadsOfDeletedRecordings(limit: 10) == [removed], "its object is to be deleted, by any server")
        try mine.deleteUpload(recordingID: "s1-1")
        try mine.deleteUpload(recordingID: "s1-1")  // idempotent
        #expect(try mine.upload(recordingID: "s1-1") == nil)
        #expect(try mine.uploadsOfDeletedRecordings(limit: 10) == [])
    }

    @Test(arguments: CatalogBackend.allCases) func recordingsUpsertReplaceAndDelete(_ backend: CatalogBackend) async throws {
        let catalog = try await backend.makeCatalog()
        var first = recording("s1", 1, status: .recording, size: 0)
        try catalog.upsertRecording(first)
        #expect(try catalog.recording(id: "s1-1") == first)
        first.status = .completed
        first.sizeBytes = 123_456_789_012
        first.finishedAt = t0.addingTimeInterval(90)
        try catalog.upsertRecording(first)
        #expect(try catalog.recording(id: "s1-1") == first)

        try catalog.upsertRecording(recording("s1", 3))
        try catalog.upsertRecording(recording("s1", 2))
        try catalog.upsertRecording(recording("s2", 1))
        #expect(try catalog.recordings(sessionID: "s1").map(\.segmentIndex) == [1, 2, 3])

        try catalog.deleteRecording(id: "s1-2")
        try catalog.deleteRecording(id: "s1-2") // idempotent
        #expect(try catalog.recording(id: "s1-2") == nil)
        #expect(try catalog.recordings(sessionID: "s1").map(\.id) == ["s1-1", "s1-3"])
    }

    @Test(arguments: CatalogBackend.allCases) func recordingFiltersByAgentStatusTimeAndLimit(_ backend: CatalogBackend) async throws {
        let catalog = try await backend.makeCatalog()
        try catalog.upsertRecording(recording("a", agent: "cam-1", status: .completed, at: 0))
        try catalog.upsertRecording(recording("b", agent: "cam-2", status: .failed, at: 10))
        try catalog.upsertRecording(recording("c", agent: "cam-1", status: .interrupted, at: 20))
        try catalog.upsertRecording(recording("d", agent: "cam-1", status: .completed, at: 30))
        try catalog.upsertRecording(recording("e", agent: "cam-2", status: .recording, at: 40))

        func ids(_ filter: RecordingFilter) throws -> [String] { try catalog.recordings(filter).map(\.sessionID) }
        #expect(try ids(RecordingFilter()) == ["e", "d", "c", "b", "a"], "newest first")
        #expect(try ids(RecordingFilter(agentID: "cam-1")) == ["d", "c", "a"])
        #expect(try ids(RecordingFilter(status: .completed)) == ["d", "a"])
        #expect(try ids(RecordingFilter(agentID: "cam-2", status: .failed)) == ["b"])
        #expect(try ids(RecordingFilter(since: t0.addingTimeInterval(10))) == ["e", "d", "c", "b"], "since is inclusive")
        #expect(try ids(RecordingFilter(until: t0.addingTimeInterval(30))) == ["c", "b", "a"], "until is exclusive")
        #expect(try ids(RecordingFilter(since: t0.addingTimeInterval(10), until: t0.addingTimeInterval(30))) == ["c", "b"])
        #expect(try ids(RecordingFilter(limit: 2)) == ["e", "d"])
        #expect(try ids(RecordingFilter(limit: 0)) == [])
        #expect(try ids(RecordingFilter(agentID: "cam-9")) == [])
    }

    @Test(arguments: CatalogBackend.allCases) func recordingFiltersBySessionLabelWhateverTheKeyHolds(_ backend: CatalogBackend) async throws {
        let catalog = try await backend.makeCatalog()
        try catalog.insertSession(session("a", labels: ["room": "studio-2", "take": "3"]))
        try catalog.insertSession(session("b", labels: ["room": "hall"]))
        try catalog.insertSession(session("c", labels: ["a.b": "dot", "q\"uote": "x"]))
        try catalog.insertSession(session("d"))
        for id in ["a", "b", "c", "d"] { try catalog.upsertRecording(recording(id, at: Double(id.unicodeScalars.first!.value))) }
        try catalog.upsertRecording(recording("a", 2, at: 200))

        func ids(_ key: String, _ value: String? = nil) throws -> [String] {
            try catalog.recordings(RecordingFilter(label: .init(key: key, value: value))).map(\.id)
        }
        #expect(try ids("room") == ["a-2", "b-1", "a-1"], "any value, every segment of the session")
        #expect(try ids("room", "studio-2") == ["a-2", "a-1"])
        #expect(try ids("room", "studio") == [], "the value matches exactly")
        #expect(try ids("take", "3") == ["a-2", "a-1"])
        #expect(try ids("a.b", "dot") == ["c-1"], "a dot in a key is not a JSON path")
        #expect(try ids("q\"uote") == ["c-1"])
        #expect(try ids("none") == [])
        #expect(try catalog.recordings(RecordingFilter(agentID: "cam-1", label: .init(key: "room", value: "hall"))).map(\.id) == ["b-1"])
    }

    @Test(arguments: CatalogBackend.allCases) func tracksUpsertAndListInTrackOrder(_ backend: CatalogBackend) async throws {
        let catalog = try await backend.makeCatalog()
        var audio = TrackRecord(sessionID: "s1", trackID: 3, label: "mic", kind: "audio", codec: "opus", width: 0, height: 0)
        let video = TrackRecord(sessionID: "s1", trackID: 1, label: "front", kind: "video", codec: "h264", width: 1280, height: 720,
                                status: .ended, samples: 900, bytes: 4_000_000, dropped: 2)
        try catalog.upsertTrack(audio)
        try catalog.upsertTrack(video)
        audio.status = .failed
        audio.error = "bad packet"
        audio.samples = 10
        try catalog.upsertTrack(audio)
        try catalog.upsertTrack(TrackRecord(sessionID: "s2", trackID: 1, label: "x", kind: "video", codec: "h264", width: 1, height: 1))
        #expect(try catalog.tracks(sessionID: "s1") == [video, audio])
        #expect(try catalog.tracks(sessionID: "none") == [])
    }

    @Test(arguments: CatalogBackend.allCases) func retentionQueriesSumSizesAndListFinishedOldestFirst(_ backend: CatalogBackend) async throws {
        let catalog = try await backend.makeCatalog()
        #expect(try catalog.totalRecordingBytes() == 0)
        try catalog.upsertRecording(recording("new", at: 300, size: 1))
        try catalog.upsertRecording(recording("live", status: .recording, at: 0, size: 10))
        try catalog.upsertRecording(recording("old", 2, at: 100, size: 100))
        try catalog.upsertRecording(recording("old", 1, at: 100, size: 1000))
        try catalog.upsertRecording(recording("mid", status: .failed, at: 200, size: 10_000))
        #expect(try catalog.totalRecordingBytes() == 11_111)
        #expect(try catalog.oldestFinishedRecordings(limit: 10, offset: 0).map(\.id) == ["old-1", "old-2", "mid-1", "new-1"])
        #expect(try catalog.oldestFinishedRecordings(limit: 2, offset: 0).map(\.id) == ["old-1", "old-2"])
        #expect(try catalog.oldestFinishedRecordings(limit: 2, offset: 2).map(\.id) == ["mid-1", "new-1"])
    }

    /// In a fleet each server's retention sees its own files only: another server's are on
    /// another disk (its paths are not in this data directory), and a file whose local copy
    /// was removed after its upload takes no room here.
    @Test(arguments: CatalogBackend.allCases) func retentionQueriesSeeOnlyThisServersFilesOnItsDisk(_ backend: CatalogBackend) async throws {
        let (mine, other, scratch) = try await backend.makeSharedCatalogs("server-a", "server-b")
        defer { _ = scratch }
        try mine.insertSession(session("a1", status: .completed))
        try mine.insertSession(session("a2", status: .completed))
        try other.insertSession(session("b1", status: .completed))
        try mine.upsertRecording(recording("a1", at: 100, size: 10))
        try mine.upsertRecording(recording("a2", at: 200, size: 100))
        try other.upsertRecording(recording("b1", at: 0, size: 1000))
        #expect(try mine.totalRecordingBytes() == 110)
        #expect(try other.totalRecordingBytes() == 1000)
        #expect(try mine.oldestFinishedRecordings(limit: 10, offset: 0).map(\.id) == ["a1-1", "a2-1"])
        #expect(try other.oldestFinishedRecordings(limit: 10, offset: 0).map(\.id) == ["b1-1"])
        try mine.recordUpload(UploadRecord(recordingID: "a2-1", objectKey: "k", etag: "e", sizeBytes: 100, uploadedAt: t0, localRemoved: true))
        #expect(try mine.totalRecordingBytes() == 10, "a file only in the bucket takes no room on this disk")
        #expect(try mine.oldestFinishedRecordings(limit: 10, offset: 0).map(\.id) == ["a1-1", "a2-1"], "it is still retained (its object goes with it)")
    }

    @Test func fileCatalogMigratesOnceAndSurvivesReopening() throws {
        let directory = try makeCatalogTestDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/catalog.sqlite"

        do {
            let catalog = try Catalog(path: path)
            try catalog.insertSession(session("s1", labels: ["k": "v"]))
            try catalog.upsertRecording(recording("s1"))
        }
        for _ in 0 ..< 2 {
            // Reopening runs the migrator again: it must find nothing to do and keep the data.
            let catalog = try Catalog(path: path)
            #expect(try catalog.session(id: "s1")?.labels == ["k": "v"])
            #expect(try catalog.recordings(sessionID: "s1").count == 1)
        }

        let catalog = try Catalog(path: path)
        try catalog.upsertTrack(TrackRecord(sessionID: "s1", trackID: 1, label: "a", kind: "video", codec: "h264", width: 2, height: 2))
        for file in [path, path + "-wal", path + "-shm"] where FileManager.default.fileExists(atPath: file) {
            #expect(try permissions(of: file) == 0o600, "\(file)")
        }
        #expect(FileManager.default.fileExists(atPath: path + "-wal"), "WAL mode")
    }

    @Test func aCatalogOfTheFirstSchemaGainsTheDurablePointAndKeepsItsRows() throws {
        let directory = try makeCatalogTestDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/catalog.sqlite"
        // What a v1 server left: the first migration only, and a finished session in it.
        let queue = try DatabaseQueue(path: path)
        try CatalogSchema.migrator.migrate(queue, upTo: "v1-agents-sessions-recordings-tracks")
        try queue.write { db in
            try db.execute(sql: """
                INSERT INTO sessions (id, agentID, labels, status, createdAt, directory)
                VALUES ('old', 'cam', '{}', 'completed', 0, '/x')
                """)
        }
        try queue.close()

        let catalog = try Catalog(path: path)
        #expect(try catalog.session(id: "old")?.status == .completed)
        #expect(try catalog.session(id: "old")?.durableSequence == nil, "unknown for sessions a v1 server finished")
        try catalog.updateSession(id: "old", status: .completed, endedAt: Date(), error: nil, durableSequence: 4_321)
        #expect(try catalog.session(id: "old")?.durableSequence == 4_321)
        try catalog.updateSession(id: "old", status: .recovered, endedAt: Date(), error: nil)
        #expect(try catalog.session(id: "old")?.durableSequence == nil)
    }

    @Test func recordingIdsOfTheFirstSchemaAreRenamedToTheirFileNumbers() throws {
        let directory = try makeCatalogTestDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/catalog.sqlite"
        let queue = try DatabaseQueue(path: path)
        try CatalogSchema.migrator.migrate(queue, upTo: "v2-session-durable-sequence")
        try queue.write { db in
            for (id, index) in [("s1-0", 0), ("s1-1", 1), ("s1-11", 11), ("hand-made", 2)] {
                try db.execute(sql: """
                    INSERT INTO recordings (id, sessionID, agentID, segmentIndex, path, status, createdAt)
                    VALUES (?, 's1', 'cam', ?, '/x', 'completed', 0)
                    """, arguments: [id, index])
            }
        }
        try queue.close()
        let catalog = try Catalog(path: path)
        #expect(try catalog.recordings(sessionID: "s1").map(\.id).sorted() == ["hand-made", "s1-0001", "s1-0002", "s1-0012"])
        #expect(RecordingSession.recordingID("s1", 0) == "s1-0001" && RecordingSession.recordingID("s1", 10_000) == "s1-10001")
    }

    @Test func catalogFromANewerServerIsRefused() throws {
        let directory = try makeCatalogTestDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/catalog.sqlite"
        _ = try Catalog(path: path)
        // Simulate a migration this build does not know, as a newer release would leave.
        try DatabaseQueue(path: path).write { db in
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v99-from-the-future')")
        }
        let error = #expect(throws: CatalogError.self) { _ = try Catalog(path: path) }
        #expect(error?.code == .newerSchema)
    }

    @Test func openingInAMissingDirectoryFailsClearly() throws {
        let error = #expect(throws: CatalogError.self) { _ = try Catalog(path: "/nonexistent-\(UUID().uuidString)/catalog.sqlite") }
        #expect(error?.code == .openFailed)
        #expect(error?.message.contains("check that its directory exists") == true)
    }

    private func permissions(of path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }
}

private func makeCatalogTestDirectory() throws -> String {
    let path = FileManager.default.temporaryDirectory.path + "/catalog-tests-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

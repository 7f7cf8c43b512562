import Foundation
import Shared
import Testing
import TestSupport
@testable import RecordServerCore

private func mode(_ path: String) -> mode_t {
    var info = stat()
    guard lstat(path, &info) == 0 else { return 0 }
    return info.st_mode & 0o7777
}

private let day = Date(timeIntervalSince1970: 1_700_000_000) // 2023-11-14T22:13:20Z

/// Storage: the directory layout and the retention policy (one name so
/// `--filter StorageTests` runs both).
@Suite enum StorageTests {}

extension StorageTests {
    @Suite struct LayoutTests {
        @Test func derivesTheSessionDirectoryFromValidIdentifiers() throws {
            let layout = try StorageLayout(dataDirectory: "/srv/rec/")
            #expect(layout.dataDirectory == "/srv/rec")
            #expect(layout.catalogPath == "/srv/rec/catalog.sqlite")
            #expect(try layout.sessionDirectory(agentID: "cam-1", sessionID: "2023.take_7", date: day)
                == "/srv/rec/recordings/cam-1/2023-11-14/2023.take_7")
            #expect(try StorageLayout(dataDirectory: "/srv//./x/../rec").dataDirectory == "/srv/rec")
        }

        @Test func dayFolderIsTheUTCDate() {
            #expect(StorageLayout.utcDay(Date(timeIntervalSince1970: 1_700_006_399)) == "2023-11-14")
            #expect(StorageLayout.utcDay(Date(timeIntervalSince1970: 1_700_006_400)) == "2023-11-15")
            #expect(StorageLayout.utcDay(Date(timeIntervalSince1970: 0)) == "1970-01-01")
        }

        @Test func createsDirectoriesWithMode0700AndReturnsTheMuxerBaseName() throws {
            let scratch = try TemporaryDirectory(prefix: "storage-tests")
            let layout = try StorageLayout(dataDirectory: scratch.path + "/data")
            let location = try layout.createSessionDirectory(agentID: "cam-1", sessionID: "s1", date: day)
            #expect(location.directory == scratch.path + "/data/recordings/cam-1/2023-11-14/s1")
            #expect(location.baseName == "recording")
            for path in [layout.dataDirectory, layout.recordingsDirectory, layout.recordingsDirectory + "/cam-1",
                         layout.recordingsDirectory + "/cam-1/2023-11-14", location.directory] {
                #expect(mode(path) == 0o700, "\(path)")
            }
            // A resumed session asks again: same answer, no error.
            let again = try layout.locate(agentID: "cam-1", sessionID: SessionID("s1"), date: day)
            #expect(again.directory == location.directory)
        }

        @Test func fitsTheSessionLocatorShape() throws {
            let scratch = try TemporaryDirectory(prefix: "storage-tests")
            let layout = try StorageLayout(dataDirectory: scratch.path)
            let locate: SessionLocator = { try layout.locate(agentID: $0, sessionID: $1, date: $2) }
            #expect(try locate("cam-2", "s9", day).directory.hasSuffix("/recordings/cam-2/2023-11-14/s9"))
        }

        static let badIdentifiers = ["..", ".", "a/b", "", String(repeating: "a", count: 65), ".hidden", "../etc", "a b", "-lead", "é"]

        @Test(arguments: badIdentifiers)
        func refusesBadAgentIDs(_ id: String) throws {
            let scratch = try TemporaryDirectory(prefix: "storage-tests")
            let layout = try StorageLayout(dataDirectory: scratch.path)
            #expect(throws: StorageError.invalidIdentifier(field: "agentID", value: id)) {
                _ = try layout.createSessionDirectory(agentID: id, sessionID: "s1", date: day)
            }
            #expect(!FileManager.default.fileExists(atPath: layout.recordingsDirectory), "nothing is created for a refused id")
        }

        @Test(arguments: badIdentifiers)
        func refusesBadSessionIDs(_ id: String) throws {
            let layout = try StorageLayout(dataDirectory: "/srv/rec")
            #expect(throws: StorageError.invalidIdentifier(field: "sessionID", value: id)) {
                _ = try layout.sessionDirectory(agentID: "cam-1", sessionID: id, date: day)
            }
        }

        @Test func acceptsTheLongestValidIdentifier() throws {
            let layout = try StorageLayout(dataDirectory: "/srv/rec")
            let id = String(repeating: "a", count: 64)
            #expect(try layout.sessionDirectory(agentID: id, sessionID: id, date: day).hasSuffix("/\(id)"))
        }

        @Test func refusesARelativeDataDirectory() {
            #expect(throws: StorageError.relativeDataDirectory(path: "data")) { _ = try StorageLayout(dataDirectory: "data") }
        }

        @Test func refusesASymbolicLinkThatLeavesTheDataDirectory() throws {
            let scratch = try TemporaryDirectory(prefix: "storage-tests")
            let outside = scratch.path + "/outside"
            try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
            let layout = try StorageLayout(dataDirectory: scratch.path + "/data")
            try layout.prepare()
            try FileManager.default.createSymbolicLink(atPath: layout.recordingsDirectory + "/cam-1", withDestinationPath: outside)

            #expect(throws: StorageError.outsideDataDirectory(path: layout.recordingsDirectory + "/cam-1", resolved: outside)) {
                _ = try layout.createSessionDirectory(agentID: "cam-1", sessionID: "s1", date: day)
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: outside).isEmpty, "nothing was written through the link")
        }

        @Test func refusesASymbolicLinkEvenWhenItStaysInside() throws {
            let scratch = try TemporaryDirectory(prefix: "storage-tests")
            let layout = try StorageLayout(dataDirectory: scratch.path)
            _ = try layout.createSessionDirectory(agentID: "cam-1", sessionID: "s1", date: day)
            try FileManager.default.createSymbolicLink(atPath: layout.recordingsDirectory + "/cam-2",
                                                       withDestinationPath: layout.recordingsDirectory + "/cam-1")
            #expect(throws: StorageError.notADirectory(path: layout.recordingsDirectory + "/cam-2")) {
                _ = try layout.createSessionDirectory(agentID: "cam-2", sessionID: "s1", date: day)
            }
        }

        @Test func refusesAFileWhereADirectoryBelongs() throws {
            let scratch = try TemporaryDirectory(prefix: "storage-tests")
            let layout = try StorageLayout(dataDirectory: scratch.path)
            try layout.prepare()
            #expect(FileManager.default.createFile(atPath: layout.recordingsDirectory + "/cam-1", contents: Data()))
            #expect(throws: StorageError.notADirectory(path: layout.recordingsDirectory + "/cam-1")) {
                _ = try layout.createSessionDirectory(agentID: "cam-1", sessionID: "s1", date: day)
            }
        }

        @Test func aDataDirectoryBehindASymbolicLinkIsAllowed() throws {
            let scratch = try TemporaryDirectory(prefix: "storage-tests")
            try FileManager.default.createDirectory(atPath: scratch.path + "/disk", withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(atPath: scratch.path + "/data", withDestinationPath: scratch.path + "/disk")
            let layout = try StorageLayout(dataDirectory: scratch.path + "/data")
            let location = try layout.createSessionDirectory(agentID: "cam-1", sessionID: "s1", date: day)
            #expect(FileManager.default.fileExists(atPath: scratch.path + "/disk/recordings/cam-1/2023-11-14/s1"))
            #expect(try layout.resolvedInsideDataDirectory(location.directory + "/recording.mp4")
                == scratch.path + "/disk/recordings/cam-1/2023-11-14/s1/recording.mp4")
        }

        @Test func containmentCheckResolvesLinksAndDotDot() throws {
            let scratch = try TemporaryDirectory(prefix: "storage-tests")
            let layout = try StorageLayout(dataDirectory: scratch.path + "/data")
            let location = try layout.createSessionDirectory(agentID: "cam-1", sessionID: "s1", date: day)
            #expect(try layout.resolvedInsideDataDirectory(location.directory + "/not-yet-written.mp4").hasSuffix("/s1/not-yet-written.mp4"))
            #expect(throws: StorageError.self) { try layout.resolvedInsideDataDirectory("/etc/passwd") }
            #expect(throws: StorageError.self) { try layout.resolvedInsideDataDirectory(location.directory + "/../../../../../etc/passwd") }
            try FileManager.default.createSymbolicLink(atPath: location.directory + "/escape", withDestinationPath: "/etc")
            #expect(throws: StorageError.outsideDataDirectory(path: location.directory + "/escape/passwd", resolved: "/etc/passwd")) {
                try layout.resolvedInsideDataDirectory(location.directory + "/escape/passwd")
            }
        }

        @Test func healthChecks() throws {
            let scratch = try TemporaryDirectory(prefix: "storage-tests")
            let layout = try StorageLayout(dataDirectory: scratch.path)
            #expect(try layout.freeBytes() > 0)
            try layout.checkWritable()
            #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path).isEmpty, "the probe file is removed")

            let missing = try StorageLayout(dataDirectory: scratch.path + "/missing")
            let error = #expect(throws: StorageError.self) { try missing.checkWritable() }
            guard case .systemCall(let operation, _, let code)? = error else { Issue.record("unexpected \(String(describing: error))"); return }
            #expect(operation == "create")
            #expect(code == ENOENT)
            #expect(throws: StorageError.self) { _ = try missing.freeBytes() }
        }
    }
}

extension StorageTests {
    @Suite struct RetentionTests {
        private let now = Date(timeIntervalSince1970: 1_800_000_000)

        /// A catalog plus real files: one finished recording per session `s<i>`, the
        /// i-th created (and finished) `ages[i]` days before `now`.
        private func fixture(ages: [Double], size: Int64 = 100, scratch: TemporaryDirectory) throws -> (Catalog, StorageLayout, [RecordingRecord]) {
            let catalog = try Catalog.inMemory()
            let layout = try StorageLayout(dataDirectory: scratch.path)
            var records: [RecordingRecord] = []
            for (i, age) in ages.enumerated() {
                let created = now.addingTimeInterval(-age * 86_400)
                let (directory, base) = try layout.createSessionDirectory(agentID: "cam-1", sessionID: "s\(i)", date: created)
                let path = "\(directory)/\(base).mp4"
                #expect(FileManager.default.createFile(atPath: path, contents: Data(count: Int(size))))
                // The sidecar, as the server leaves it beside every session's files.
                for name in ["session.mcrp", "session-settings.json"] {
                    #expect(FileManager.default.createFile(atPath: directory + "/" + name, contents: Data([1])))
                }
                let record = RecordingRecord(id: "s\(i)-1", sessionID: "s\(i)", agentID: "cam-1", segmentIndex: 1, path: path, status: .completed,
                                             sizeBytes: size, createdAt: created, finishedAt: created.addingTimeInterval(60))
                try catalog.upsertRecording(record)
                records.append(record)
            }
            return (catalog, layout, records)
        }

        @Test func isOffByDefault() throws {
            let scratch = try TemporaryDirectory(prefix: "storage-tests")
            let (catalog, layout, records) = try fixture(ages: [1000, 500], scratch: scratch)
            let policy = RetentionPolicy()
            #expect(!policy.isEnabled)
            #expect(policy == .off)
            #expect(try policy.apply(catalog: catalog, storage: layout, now: now, isLive: { _ in false }).isEmpty)
            #expect(try catalog.oldestFinishedRecordings(limit: 10, offset: 0).count == 2)
            #expect(records.allSatisfy { FileManager.default.fileExists(atPath: $0.path) })
            #expect(ServerConfiguration().retentionPolicy == .off)
        }

        @Test func deletesByAgeOldestFirst() throws {
            let scratch = try TemporaryDirectory(prefix: "storage-tests")
            let (catalog, layout, records) = try fixture(ages: [3, 40, 8, 10], scratch: scratch)
            let deleted = try RetentionPolicy(maxAge: 7 * 86_400).apply(catalog: catalog, storage: layout, now: now, isLive: { _ in false })
            #expect(deleted.map(\.id) == ["s1-1", "s3-1", "s2-1"])
            #expect(try catalog.oldestFinishedRecordings(limit: 10, offset: 0).map(\.id) == ["s0-1"])
            #expect(FileManager.default.fileExists(atPath: records[0].path))
            for record in deleted {
                #expect(!FileManager.default.fileExists(atPath: record.path))
                // The emptied session directory and its sidecar are tidied away too.
                #expect(!FileManager.default.fileExists(atPath: (record.path as NSString).deletingLastPathComponent))
            }
            #expect(FileManager.default.fileExists(atPath: layout.recordingsDirectory), "recordings/ itself stays")
        }

        @Test func deletesBySizeUntilWithinBudget() throws {
            let scratch = try TemporaryDirectory(prefix: "storage-tests")
            let (catalog, layout, _) = try fixture(ages: [1, 4, 2, 3], size: 100, scratch: scratch)
            // A live recording still counts towards the disk budget but is never a candidate.
            try catalog.upsertRecording(RecordingRecord(id: "live-1", sessionID: "live", agentID: "cam-1", segmentIndex: 1,
                                                        path: scratch.path + "/live.mp4", status: .recording, sizeBytes: 50,
                                                        createdAt: now.addingTimeInterval(-30 * 86_400)))
            #expect(try catalog.totalRecordingBytes() == 450)
            let deleted = try RetentionPolicy(maxTotalBytes: 250).apply(catalog: catalog, storage: layout, now: now, isLive: { _ in false })
            #expect(deleted.map(\.id) == ["s1-1", "s3-1"])
            #expect(try catalog.totalRecordingBytes() == 250)
            #expect(try catalog.recording(id: "live-1") != nil)
        }

        /// A file only in the bucket (its local copy removed after its upload) takes no room on
        /// this disk: the size limit neither counts nor deletes it; its age does, and its
        /// upload row is left for the uploader to delete the object.
        @Test func aFileOnlyInTheBucketIsDeletedByAgeNotBySize() throws {
            let scratch = try TemporaryDirectory(prefix: "storage-tests")
            let (catalog, layout, records) = try fixture(ages: [9, 4, 2], size: 100, scratch: scratch)
            try FileManager.default.removeItem(atPath: records[0].path)
            try catalog.recordUpload(UploadRecord(recordingID: "s0-1", objectKey: "k", etag: "e", sizeBytes: 100, uploadedAt: now, localRemoved: true))
            #expect(try catalog.totalRecordingBytes() == 200)
            let bySize = try RetentionPolicy(maxTotalBytes: 150).apply(catalog: catalog, storage: layout, now: now, isLive: { _ in false })
            #expect(bySize.map(\.id) == ["s1-1"], "the oldest on this disk, not the oldest in the bucket")
            let byAge = try RetentionPolicy(maxAge: 7 * 86_400).apply(catalog: catalog, storage: layout, now: now, isLive: { _ in false })
            #expect(byAge.map(\.id) == ["s0-1"])
            #expect(try catalog.uploadsOfDeletedRecordings(limit: 10).map(\.recordingID) == ["s0-1"], "its object is to be deleted")
        }

        @Test func neverDeletesRecordingsOfLiveSessions() throws {
            let scratch = try TemporaryDirectory(prefix: "storage-tests")
            let (catalog, layout, records) = try fixture(ages: [100, 90, 80], scratch: scratch)
            // s0 is awaiting resume (its completed segment stays); s1 and s2 are finished and old.
            let deleted = try RetentionPolicy(maxAge: 86_400, maxTotalBytes: 1)
                .apply(catalog: catalog, storage: layout, now: now, isLive: { $0 == "s0" })
            #expect(deleted.map(\.id) == ["s1-1", "s2-1"])
            #expect(FileManager.default.fileExists(atPath: records[0].path))
            #expect(try catalog.recording(id: "s0-1") != nil)
        }

        @Test func pagesPastManyKeptRecordings() throws {
            // More live rows than one page: the pass must step over them, not loop or stop early.
            let catalog = try Catalog.inMemory()
            for i in 0 ..< 600 {
                try catalog.upsertRecording(RecordingRecord(id: "r\(i)", sessionID: i < 590 ? "live" : "s\(i)", agentID: "cam-1",
                                                            segmentIndex: i, path: "/nonexistent/r\(i).mp4", status: .completed,
                                                            sizeBytes: 1, createdAt: now.addingTimeInterval(Double(i - 10_000))))
            }
            let deleted = try RetentionPolicy(maxTotalBytes: 595).apply(catalog: catalog, now: now, isLive: { $0 == "live" })
            #expect(deleted.map(\.id) == ["r590", "r591", "r592", "r593", "r594"])
        }

        @Test func aFileAlreadyGoneStillLosesItsRow() throws {
            let scratch = try TemporaryDirectory(prefix: "storage-tests")
            let (catalog, layout, records) = try fixture(ages: [30], scratch: scratch)
            try FileManager.default.removeItem(atPath: records[0].path)
            let deleted = try RetentionPolicy(maxAge: 86_400).apply(catalog: catalog, storage: layout, now: now, isLive: { _ in false })
            #expect(deleted.map(\.id) == ["s0-1"])
            #expect(try catalog.recording(id: "s0-1") == nil)
        }

        @Test func refusesToDeleteOutsideTheDataDirectory() throws {
            let scratch = try TemporaryDirectory(prefix: "storage-tests")
            let (catalog, layout, _) = try fixture(ages: [30], scratch: scratch)
            let victim = scratch.path + "-victim.mp4"
            #expect(FileManager.default.createFile(atPath: victim, contents: Data([1])))
            defer { try? FileManager.default.removeItem(atPath: victim) }
            try catalog.upsertRecording(RecordingRecord(id: "evil-1", sessionID: "evil", agentID: "cam-1", segmentIndex: 1, path: victim,
                                                        status: .completed, createdAt: now.addingTimeInterval(-100 * 86_400)))
            let error = #expect(throws: RetentionError.self) {
                try RetentionPolicy(maxAge: 86_400).apply(catalog: catalog, storage: layout, now: now, isLive: { _ in false })
            }
            #expect(error?.reason == .storage(.outsideDataDirectory(path: victim, resolved: victim)))
            #expect(FileManager.default.fileExists(atPath: victim))
            #expect(try catalog.recording(id: "evil-1") != nil)
        }

        @Test func configurationDaysBecomeSeconds() {
            var config = ServerConfiguration()
            config.retention = .init(maxAgeDays: 2, maxTotalBytes: 1 << 40)
            #expect(config.retentionPolicy == RetentionPolicy(maxAge: 172_800, maxTotalBytes: 1 << 40))
        }
    }
}

import Foundation
import Testing
import TestSupport
@testable import RecordServerCore

/// What one catalog call costs on each backend, side by side: the calls a session makes (insert
/// its row, save its file's and tracks' rows, end it) and the admin API's listing, on the
/// SQLite file (WAL, in the data directory) and on PostgreSQL 15 over loopback TCP. A
/// measurement, not a check: it runs with CATALOG_BENCH=1 (`swift test --filter CatalogBackendBench`).
@Suite("Catalog backends: cost per call", .serialized,
       .enabled(if: ProcessInfo.processInfo.environment["CATALOG_BENCH"] == "1", "needs CATALOG_BENCH=1"))
struct CatalogBackendBenchTests {
    static let sessions = 500

    @Test func sessionWritesAndListingsOnSQLiteAndPostgreSQL() async throws {
        let scratch = try TemporaryDirectory(prefix: "catalog-bench")
        let sqlite = try Catalog(path: scratch.file("catalog.sqlite"))
        let postgres = try PostgresCatalog(address: PostgresCatalogAddress(parsing: await TestPostgres.shared().createDatabase()), logger: quietLogger)
        for (name, catalog) in [("sqlite", sqlite as any RecordingCatalog), ("postgresql", postgres as any RecordingCatalog)] {
            let t0 = Date(timeIntervalSince1970: 1_700_000_000)
            let writes = ContinuousClock.now
            for index in 0..<Self.sessions {
                let id = "s-\(index)"
                try catalog.insertSession(SessionRecord(id: id, agentID: "cam-\(index % 8)", labels: ["take": "\(index)"], status: .recording,
                                                        createdAt: t0.addingTimeInterval(Double(index)), directory: "/d/\(id)"))
                for track in 1...3 {
                    try catalog.upsertTrack(TrackRecord(sessionID: id, trackID: track, label: "t\(track)", kind: "video", codec: "h264",
                                                        width: 1280, height: 720))
                }
                try catalog.upsertRecording(RecordingRecord(id: id + "-0001", sessionID: id, agentID: "cam-\(index % 8)", segmentIndex: 0,
                                                            path: "/d/\(id)/recording.mp4", status: .completed, sizeBytes: 1 << 20,
                                                            createdAt: t0.addingTimeInterval(Double(index))))
                try catalog.updateSession(id: id, status: .completed, endedAt: t0, error: nil, durableSequence: 100)
            }
            let writeTime = ContinuousClock.now - writes
            let reads = ContinuousClock.now
            for index in 0..<100 {
                let listed = try catalog.recordings(RecordingFilter(agentID: "cam-\(index % 8)", limit: 50))
                #expect(listed.count == 50)
            }
            let readTime = ContinuousClock.now - reads
            func millis(_ d: Duration, per count: Int) -> String {
                String(format: "%.3f ms", (Double(d.components.seconds) * 1e3 + Double(d.components.attoseconds) / 1e15) / Double(count))
            }
            // 6 calls per session: insert, 3 tracks, its file, its end.
            print("bench figure: catalog \(name): \(millis(writeTime, per: Self.sessions * 6)) per write call, "
                  + "\(millis(readTime, per: 100)) per listing of 50 recordings by agent (\(Self.sessions) sessions)")
        }
    }
}

import Foundation
import GRDB
@testable import RecordServerCore
import TestSupport

/// What the invariant checks of a chaos run counted, and what they found wrong.
struct ChaosReport: CustomStringConvertible {
    var actions: [String: Int] = [:]
    var sessionsChecked = 0
    var cancelledChecked = 0
    var filesChecked = 0
    var framesChecked = 0
    var audioPacketsChecked = 0
    var acknowledgedChecked: UInt64 = 0
    var deletedChecked = 0
    var statuses: [String: Int] = [:]
    var problems: [String] = []

    var description: String {
        let acts = actions.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        let ends = statuses.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        return "actions [\(acts)]; \(sessionsChecked) sessions [\(ends)], \(filesChecked) files, \(framesChecked) frame counters "
            + "and \(audioPacketsChecked) audio packets in order, \(acknowledgedChecked) acknowledged samples accounted for, "
            + "\(cancelledChecked) cancelled and \(deletedChecked) deleted recordings gone; \(problems.count) problems"
    }
}

extension ChaosRun {
    /// Reads the catalog and every file after the run (the server has stopped).
    func checkInvariants() throws -> ChaosReport {
        var report = ChaosReport()
        report.actions = Dictionary(uniqueKeysWithValues: counts.map { ($0.key.rawValue, $0.value) })
        let dataDirectory = fixture.configuration.dataDirectory
        let catalogPath = dataDirectory + "/catalog.sqlite"
        let catalog = try Catalog(path: catalogPath)
        let sessionIDs = try DatabaseQueue(path: catalogPath).read { try String.fetchAll($0, sql: "SELECT id FROM sessions ORDER BY createdAt") }
        var acknowledged: [String: UInt64] = [:]
        for agent in agentLogs { acknowledged.merge(agent.acknowledged()) { max($0, $1) } }
        var filesInCatalog: Set<String> = []

        for id in sessionIDs {
            guard let session = try catalog.session(id: id) else { continue }
            report.statuses[session.status.rawValue, default: 0] += 1
            let rows = try catalog.recordings(sessionID: id).sorted { $0.segmentIndex < $1.segmentIndex }
            filesInCatalog.formUnion(rows.map(\.path))
            let gone = deletedRecordings.filter { $0.session == id }
            for recording in gone {
                if FileManager.default.fileExists(atPath: recording.path) || rows.contains(where: { $0.id == recording.id }) {
                    report.problems.append("deleted recording \(recording.id) is still there (file or row)")
                }
                report.deletedChecked += 1
            }
            switch session.status {
            case .recording:
                report.problems.append("session \(id) is still `recording` in the catalog after the server stopped")
            case .cancelled:
                if !rows.isEmpty { report.problems.append("cancelled session \(id) still lists \(rows.map(\.path))") }
                // A session directory that is gone holds no file, which is what is checked.
                let left = (try? FileManager.default.contentsOfDirectory(atPath: session.directory))?.filter { $0.hasSuffix(".mp4") } ?? []
                if !left.isEmpty { report.problems.append("cancelled session \(id) left \(left)") }
                report.cancelledChecked += 1
                continue
            default:
                break
            }
            try check(session: session, rows: rows, acknowledged: acknowledged[id] ?? 0, complete: gone.isEmpty,
                      tracks: try catalog.tracks(sessionID: id), into: &report)
        }

        // No file that the catalog does not know (a row lost to a failed write).
        let known = filesInCatalog.union(deletedRecordings.map(\.path))
        for file in Self.mp4Files(under: dataDirectory) where !known.contains(file) {
            report.problems.append("\(file) is on disk but in no catalog row")
        }
        return report
    }

    /// One finished session: its files play, say what the catalog says, and hold every
    /// acknowledged sample once and in order.
    private func check(session: SessionRecord, rows: [RecordingRecord], acknowledged: UInt64, complete: Bool,
                       tracks: [TrackRecord], into report: inout ChaosReport) throws {
        let id = session.id
        var packetsByLabel: [String: Int] = [:]
        var frames: [Int?] = []
        var packets = 0
        for row in rows {
            guard FileManager.default.fileExists(atPath: row.path) else {
                report.problems.append("\(row.id): \(row.path) is missing")
                continue
            }
            if row.status == .recording { report.problems.append("recording \(row.id) is still `recording`") }
            if let errors = try Oracle.decodeErrors(row.path) { report.problems.append("\(row.path) does not play cleanly: \(errors)") }
            let size = try FileManager.default.attributesOfItem(atPath: row.path)[.size] as? Int64
            if row.sizeBytes != size { report.problems.append("\(row.id): catalog \(row.sizeBytes) B, file \(size ?? -1) B") }
            // No duration is itself the problem, recorded here with the file's name.
            guard let duration = try? Oracle.duration(row.path) else {
                report.problems.append("\(row.path): ffprobe reads no duration")
                continue
            }
            if abs(row.durationSeconds - duration) >= 0.05 {
                report.problems.append("\(row.id): catalog \(row.durationSeconds) s, ffprobe \(duration) s")
            }
            let streams = try Oracle.streams(row.path)
            for (index, stream) in streams.enumerated() {
                packetsByLabel[stream.handler, default: 0] += stream.packets
                packets += stream.packets
                if stream.codec == "opus" {
                    let times = try Oracle.packetTimes(row.path, stream: index)
                    if zip(times, times.dropFirst()).contains(where: { $0 >= $1 }) {
                        report.problems.append("\(row.path): audio packets out of order or repeated")
                    }
                    report.audioPacketsChecked += times.count
                }
            }
            frames += try Oracle.videoFrameNumbers(row.path).first ?? []
            report.filesChecked += 1
        }
        for track in tracks {
            if track.status == .active { report.problems.append("session \(id): track \(track.label) still `active`") }
            if complete, Int(track.samples) != packetsByLabel[track.label] ?? 0 {
                report.problems.append("session \(id): track \(track.label) has \(track.samples) samples in the catalog, "
                                       + "\(packetsByLabel[track.label] ?? 0) in its files")
            }
        }
        report.sessionsChecked += 1
        guard complete else { return }  // a deleted segment leaves a gap on purpose
        let numbers = frames.compactMap { $0 }
        if numbers.count != frames.count { report.problems.append("session \(id): \(frames.count - numbers.count) unreadable frame counters") }
        // Every frame the camera made is in the files once, in order, unless the agent dropped it
        // at the source and said so (a DropReport: the catalog's `dropped` of the camera track).
        let files = "\(numbers.count) frames in \(rows.count) files: \(rows.map { "\($0.id) \($0.status.rawValue) \($0.path.split(separator: "/").last ?? "")" })"
        if let first = numbers.first, first != 0 {
            report.problems.append("session \(id): the first frame is \(first), not 0 (\(files))")
        }
        if let pair = zip(numbers, numbers.dropFirst()).first(where: { $0 >= $1 }) {
            report.problems.append("session \(id): frame \(pair.1) follows \(pair.0): repeated or out of order (\(files))")
        }
        let reported = Int(tracks.first { $0.label == "front" }?.dropped ?? 0)
        let missing = ((numbers.last ?? -1) + 1) - Set(numbers).count
        if missing > reported {
            report.problems.append("session \(id): \(missing) frames missing, \(reported) reported dropped by the agent: lost (\(files))")
        }
        report.framesChecked += numbers.count
        if UInt64(packets) < acknowledged {
            report.problems.append("session \(id): \(acknowledged) samples acknowledged to the agent, \(packets) in its files")
        }
        report.acknowledgedChecked += acknowledged
    }

    static func mp4Files(under directory: String) -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: directory) else { return [] }
        return walker.compactMap { $0 as? String }.filter { $0.hasSuffix(".mp4") }.map { directory + "/" + $0 }
    }
}

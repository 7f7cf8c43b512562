import Foundation
import RecordServerCore
import Testing

extension Oracle {
    /// The catalog says what the file holds: size, duration, per-track sample counts (by
    /// label, against ffprobe's packet counts), and no track left `active`.
    public static func expectCatalogMatchesFile(_ recording: RecordingRecord, tracks: [TrackRecord],
                                         sourceLocation: SourceLocation = #_sourceLocation) throws {
        let size = try FileManager.default.attributesOfItem(atPath: recording.path)[.size] as? Int64
        #expect(recording.sizeBytes == size, "catalog size \(recording.sizeBytes) B, file \(size ?? -1) B", sourceLocation: sourceLocation)
        let seconds = try duration(recording.path)
        #expect(abs(recording.durationSeconds - seconds) < 0.05, "catalog duration \(recording.durationSeconds) s, ffprobe \(seconds) s",
                sourceLocation: sourceLocation)
        let packets = Dictionary(try streams(recording.path).map { ($0.handler, Int64($0.packets)) }, uniquingKeysWith: +)
        for track in tracks {
            #expect(track.samples == packets[track.label], "track \(track.label): catalog \(track.samples) samples, file \(packets[track.label] ?? -1)",
                    sourceLocation: sourceLocation)
            #expect(track.status != .active, "track \(track.label) still active after the session ended", sourceLocation: sourceLocation)
        }
    }
}

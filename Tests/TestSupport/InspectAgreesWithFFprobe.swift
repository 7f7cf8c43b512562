import Foundation
import Testing

/// `recordctl inspect --json` against ffprobe on the same file.
public enum InspectAgreesWithFFprobe {
    public static func check(_ file: String) throws {
        let inspect = try recordctl(["inspect", "--json", file])
        try #require(inspect.status == 0, "\(inspect.output)")
        let ours = try inspect.json()["tracks"] as? [[String: Any]] ?? []
        let probe = try tool("ffprobe", ["-v", "error", "-count_packets", "-show_entries",
                                         "stream=index,codec_type,codec_name,width,height,nb_frames,nb_read_packets,duration",
                                         "-of", "json", file])
        try #require(probe.status == 0, "\(probe.stderr)")
        let streams = try #require(try JSONSerialization.jsonObject(with: Data(probe.stdout.utf8)) as? [String: Any])["streams"] as? [[String: Any]] ?? []
        #expect(ours.count == streams.count, "track count")
        #expect(ours.count >= 2)
        for (track, stream) in zip(ours, streams) {
            #expect(track["codec"] as? String == stream["codec_name"] as? String)
            #expect(track["kind"] as? String == stream["codec_type"] as? String)
            if track["kind"] as? String == "video" {
                #expect(track["width"] as? Int == stream["width"] as? Int)
                #expect(track["height"] as? Int == stream["height"] as? Int)
            }
            let frames = Int(stream["nb_frames"] as? String ?? "") ?? -1
            let packets = Int(stream["nb_read_packets"] as? String ?? "") ?? -1
            #expect(track["samples"] as? Int == frames, "frame count of \(track["label"] ?? "")")
            #expect(track["samples"] as? Int == packets, "packet count of \(track["label"] ?? "")")
            let duration = Double(stream["duration"] as? String ?? "") ?? -1
            let ourDuration = track["duration_seconds"] as? Double ?? -2
            // ffprobe leaves Opus's pre-skip (312 samples at 48 kHz = 6.5 ms) out of the stream duration.
            let preSkip = track["codec"] as? String == "opus" ? 312.0 / 48000 : 0
            #expect(abs(duration - (ourDuration - preSkip)) < 0.002, "duration of \(track["label"] ?? ""): ours \(ourDuration), ffprobe \(duration)")
        }
    }
}

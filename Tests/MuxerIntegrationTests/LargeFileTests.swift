import TestSupport
import Foundation
import RecordCtlCore
import Shared
import Testing

/// A recording over 4 GiB: 64-bit `mdat` size and `co64` chunk offsets, judged by ffprobe and
/// ffmpeg. Writes ~4.5 GB, so it is opt-in: `MUX_LARGE_FILE_TEST=1 swift test --filter LargeFile`.
@Suite("Files over 4 GiB", .enabled(if: ProcessInfo.processInfo.environment["MUX_LARGE_FILE_TEST"] == "1",
                                    "set MUX_LARGE_FILE_TEST=1 to write a 4.5 GB file"))
struct LargeFileTests {
    @Test("a 4.5 GB recording finalizes with co64 and a 64-bit mdat, and ffmpeg reads every packet")
    func overFourGiB() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("large-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let recording = try SyntheticRecording.generate(seconds: 2, videos: [.init(label: "front", width: 320, height: 240, fps: 30)], audio: nil)
        // Each access unit gets ~1 MiB of filler data (NAL type 12, ignored by decoders), so a
        // few thousand real frames make a file over 4 GiB.
        let filler: [UInt8] = [0, 0, 0, 1, 12] + [UInt8](repeating: 0xFF, count: 1 << 20) + [0x80]
        var config = MuxerConfiguration(tracks: recording.tracks, directory: dir, baseName: "large", creationTime: 0)
        config.durability = .none
        let muxer = try MP4Muxer(configuration: config)
        try muxer.start()
        let frames = 4_400
        let base = recording.samples
        for n in 0..<frames {
            var sample = base[n % base.count]
            let shift = Int64(n / base.count) * Int64(base.count) * 33_333_333
            sample.pts += shift
            sample.dts += shift
            sample.sequence = UInt64(n + 1)
            sample.data += filler
            _ = try muxer.append(sample)
        }
        let summary = try muxer.finish()
        let file = try #require(summary.segments.first)
        #expect(file.fileSize > UInt64(UInt32.max), "the file must exceed 4 GiB (it is \(file.fileSize) bytes)")

        // Our reader: a 64-bit mdat and co64 chunk offsets.
        let scan = try MP4FileScanner.scan(path: file.path)
        let mdat = try #require(scan.boxes.first { $0.type == "mdat" })
        #expect(mdat.size > UInt64(UInt32.max))
        let stbl = try #require(scan.movie?.tracks.first).media.information.sampleTable
        #expect(stbl.chunkOffsets.is64Bit)

        // Independent: ffprobe counts every packet; ffmpeg decodes without errors.
        let probe = try runTool("ffprobe", ["-v", "error", "-count_packets", "-show_entries", "stream=codec_name,nb_read_packets,width,height", "-of", "csv=p=0", file.path])
        #expect(probe.status == 0)
        #expect(probe.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) == "h264,320,240,\(frames)")
        let decode = try runTool("ffmpeg", ["-nostdin", "-v", "error", "-i", file.path, "-f", "null", "-"])
        #expect(decode.status == 0)
        #expect(decode.stderr.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "ffmpeg: \(decode.stderr.prefix(500))")
    }
}

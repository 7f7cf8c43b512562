import Foundation
import RecordCtlCore
import Shared
import Testing

/// Durable fragments leave the page cache: a recording server writes media it will not read
/// back while recording, and caching it only makes the kernel reclaim memory under load.
/// Residency is read with mincore(2) on a mapping of the file; without fsync (no drop) the
/// same recording stays cached, which shows the measurement itself works.
@Suite struct PageCacheTests {
    @Test(arguments: [MuxerConfiguration.Durability.fsyncEveryFragment, .none])
    func durableFragmentsAreDroppedFromThePageCache(durability: MuxerConfiguration.Durability) throws {
        let dir = try Self.diskBackedDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let recording = try SyntheticRecording.generate(seconds: 4, videos: [.init(label: "front", width: 320, height: 240, fps: 30)], audio: nil)
        // 64 KiB of filler per access unit (NAL type 12) makes fragments of ~2 MiB.
        let filler: [UInt8] = [0, 0, 0, 1, 12] + [UInt8](repeating: 0xFF, count: 64 << 10) + [0x80]
        var config = MuxerConfiguration(tracks: recording.tracks, directory: dir, baseName: "cache", creationTime: 0)
        config.durability = durability
        let muxer = try MP4Muxer(configuration: config)
        try muxer.start()
        var durableBytes = 0
        for var sample in recording.samples {
            sample.data += filler
            for case let .fragmentDurable(report) in try muxer.append(sample) { durableBytes += report.byteCount }
        }
        #expect(durableBytes > 4 << 20, "at least two fragments must be written (\(durableBytes) bytes)")

        let resident = try Self.residentFraction(path: dir + "/cache.mp4")
        if durability == .fsyncEveryFragment {
            #expect(resident < 0.1, "\(Int(resident * 100)) % of the fsynced file is still cached")
        } else {
            #expect(resident > 0.9, "without fsync nothing is dropped, yet only \(Int(resident * 100)) % is cached")
        }
        _ = try muxer.finish()
    }

    /// A new directory on the package's own disk (under .build), not /tmp: tmpfs pages cannot be
    /// dropped, and some machines mount /tmp as tmpfs.
    static func diskBackedDirectory() throws -> String {
        let dir = FileManager.default.currentDirectoryPath + "/.build/page-cache-test-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    /// The share of the file's pages that are in the page cache.
    static func residentFraction(path: String) throws -> Double {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw POSIXError(.ENOENT) }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_size > 0 else { throw POSIXError(.EIO) }
        let length = Int(st.st_size)
        guard let map = mmap(nil, length, PROT_READ, MAP_SHARED, fd, 0), map != MAP_FAILED else { throw POSIXError(.ENOMEM) }
        defer { munmap(map, length) }
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        let pages = (length + pageSize - 1) / pageSize
        var vector = [UInt8](repeating: 0, count: pages)
        guard mincore(map, length, &vector) == 0 else { throw POSIXError(.EINVAL) }
        return Double(vector.filter { $0 & 1 == 1 }.count) / Double(pages)
    }
}

import Foundation
@testable import MP4
import Shared
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `RandomAccessFile.write(gathering:at:)` puts the parts in the file exactly as one joined
/// write would: the muxer writes every fragment this way, from the samples' own arrays.
@Suite struct GatheredWriteTests {
    /// Parts of every size from empty to 6 KB, more than one `pwritev` takes, after a prefix.
    static func parts(count: Int, seed: UInt64) -> [[UInt8]] {
        var random = SplitMix64(seed: seed)
        return (0..<count).map { _ in
            let size = Int(random.next() % 6_000) * (random.next() % 7 == 0 ? 0 : 1)
            return (0..<size).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        }
    }

    @Test func aFileOnDiskHoldsThePartsJoined() throws {
        let directory = try TemporaryDirectory(prefix: "gathered")
        let path = directory.file("joined.bin")
        let parts = Self.parts(count: 3 * GatheredWrite.partsPerCall + 5, seed: 16)
        let prefix = [UInt8](repeating: 0xA5, count: 1_000)
        let file = try RandomAccessFile(path: path, mode: .createNew(mode: 0o644))
        try file.write(prefix, at: 0)
        try file.write(gathering: parts, at: UInt64(prefix.count))
        file.close()
        let written = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(parts.contains { $0.isEmpty } && parts.count > GatheredWrite.partsPerCall)
        #expect(written == prefix + parts.joined(), "\(written.count) bytes on disk, \(prefix.count + parts.joined().count) written")
    }

    @Test func aMemoryFileHoldsThePartsJoined() throws {
        let path = MemoryFiles.root + "gathered-\(UUID().uuidString)/joined.bin"
        let parts = Self.parts(count: 2 * GatheredWrite.partsPerCall + 1, seed: 61)
        defer { MemoryFiles.remove(path) }
        let file = try RandomAccessFile(path: path, mode: .createNew(mode: 0o644))
        try file.write(gathering: parts, at: 10)
        let expected = [UInt8](repeating: 0, count: 10) + parts.joined()
        #expect(try file.read(count: expected.count + 1, at: 0) == expected)
    }

    @Test func aFailedWriteNamesTheFileAndItsErrno() throws {
        let directory = try TemporaryDirectory(prefix: "gathered")
        let path = try directory.file("read-only.bin", [1, 2, 3])
        let file = try RandomAccessFile(path: path, mode: .readOnly)
        let error = #expect(throws: MuxerError.self) { try file.write(gathering: [[4, 5], [6]], at: 3) }
        #expect(error?.errno == EBADF)
        #expect(error?.message.contains(path) == true, "\(error?.message ?? "")")
    }

    /// A short write (a signal, a nearly full disk) resumes exactly where it stopped, inside a
    /// part or at its end.
    @Test func theCursorResumesAfterShortWrites() {
        let storage: [[UInt8]] = [[1, 2, 3, 4, 5], [6, 7, 8, 9, 10, 11, 12], [13, 14, 15, 16]]
        _ = GatheredWrite.pinning(storage[...]) { vectors in
            var cursor = GatheredWrite.Cursor(vectors)
            func left() -> [UInt8] {
                cursor.remaining.flatMap { Array(UnsafeRawBufferPointer(start: $0.iov_base, count: $0.iov_len)) }
            }
            cursor.advance(by: 2)
            #expect(left() == Array(UInt8(3)...16) && cursor.written == 2)
            cursor.advance(by: 3)
            #expect(left() == Array(UInt8(6)...16) && cursor.written == 5)
            cursor.advance(by: 8)
            #expect(left() == [14, 15, 16] && !cursor.isDone)
            cursor.advance(by: 3)
            #expect(cursor.isDone && cursor.written == 16)
            return 0
        }
    }
}

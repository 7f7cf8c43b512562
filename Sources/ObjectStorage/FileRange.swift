import Crypto
import Foundation
import NIOCore
import NIOPosix

/// A file opened for reading, closed when the value goes away. Reads are `pread`s at explicit
/// offsets, so several parts of one file can be read at once, and they run on NIO's blocking
/// thread pool, never on the cooperative pool or an event loop.
final class ReadOnlyFile: Sendable {
    let path: String
    private let descriptor: Int32

    init(path: String) throws(S3FileError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .cannotOpen(path, errno: errno) }
        self.path = path
        descriptor = fd
    }

    deinit { close(descriptor) }

    /// The file's size now.
    func size() throws(S3FileError) -> Int64 {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw .cannotRead(path, errno: errno) }
        return Int64(info.st_size)
    }

    /// Exactly `count` bytes at `offset`; a file that ended early (it shrank) is an error.
    func read(offset: Int64, count: Int) async throws -> ByteBuffer {
        try await NIOThreadPool.singleton.runIfActive { [self] () throws -> ByteBuffer in
            var buffer = ByteBufferAllocator().buffer(capacity: count)
            var done = 0
            while done < count {
                let got = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count - done) { space in
                    pread(descriptor, space.baseAddress, count - done, off_t(offset) + off_t(done))
                }
                if got < 0 {
                    if errno == EINTR { continue }
                    throw S3FileError.cannotRead(path, errno: errno)
                }
                if got == 0 { throw S3FileError.shrank(path, expectedEnd: offset + Int64(count)) }
                done += got
            }
            return buffer
        }
    }
}

enum S3FileError: Error, CustomStringConvertible {
    case cannotOpen(String, errno: Int32)
    case cannotRead(String, errno: Int32)
    case shrank(String, expectedEnd: Int64)

    var description: String {
        switch self {
        case .cannotOpen(let path, let code): "cannot open \(path): \(String(cString: strerror(code)))"
        case .cannotRead(let path, let code): "cannot read \(path): \(String(cString: strerror(code)))"
        case .shrank(let path, let end): "\(path) ended before byte \(end): it changed while it was uploaded"
        }
    }
}

/// The bytes `range` of a file as a stream of buffers of at most `chunkSize` bytes: a part's
/// request body, read as it is sent, so memory holds one chunk per part in flight, not the part.
struct FileRangeChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let file: ReadOnlyFile
    let range: Range<Int64>
    var chunkSize = 1 << 20

    struct AsyncIterator: AsyncIteratorProtocol {
        let file: ReadOnlyFile
        var offset: Int64
        let end: Int64
        let chunkSize: Int

        mutating func next() async throws -> ByteBuffer? {
            guard offset < end else { return nil }
            let count = Int(Swift.min(Int64(chunkSize), end - offset))
            let buffer = try await file.read(offset: offset, count: count)
            offset += Int64(count)
            return buffer
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(file: file, offset: range.lowerBound, end: range.upperBound, chunkSize: chunkSize)
    }
}

/// The digests of a part that S3 checks: MD5 for `Content-MD5` (and the part's ETag), SHA-256
/// for the signed payload hash (`x-amz-content-sha256`).
struct PartDigest: Sendable, Equatable {
    var md5: [UInt8]
    var sha256: [UInt8]

    var md5Hex: String { SigV4Encoding.hex(md5) }
    var md5Base64: String { Data(md5).base64EncodedString() }
    var sha256Hex: String { SigV4Encoding.hex(sha256) }

    init(md5: [UInt8], sha256: [UInt8]) {
        self.md5 = md5
        self.sha256 = sha256
    }

    init(of bytes: some DataProtocol) {
        md5 = Array(Insecure.MD5.hash(data: bytes))
        sha256 = Array(SHA256.hash(data: bytes))
    }

    /// Reads `range` of `file` once and hashes it.
    static func of(_ file: ReadOnlyFile, range: Range<Int64>) async throws -> PartDigest {
        var md5 = Insecure.MD5()
        var sha = SHA256()
        for try await chunk in FileRangeChunks(file: file, range: range) {
            chunk.withUnsafeReadableBytes { bytes in
                md5.update(bufferPointer: bytes)
                sha.update(bufferPointer: bytes)
            }
        }
        return PartDigest(md5: Array(md5.finalize()), sha256: Array(sha.finalize()))
    }
}

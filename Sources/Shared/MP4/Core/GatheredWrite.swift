#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The pieces of ``RandomAccessFile/write(gathering:at:)``: arrays kept in place while the
/// kernel reads them, and `pwritev` resumed after a short write.
enum GatheredWrite {
    /// Parts per `pwritev`: far below `IOV_MAX` (1024 on Linux), and the depth of the nested
    /// closures that keep the parts' storage in place while the kernel reads it.
    static let partsPerCall = 64

    /// Calls `body` with an `iovec` for each non-empty part, each valid for the whole call.
    static func pinning(_ parts: ArraySlice<[UInt8]>, _ body: ([iovec]) -> Int32) -> Int32 {
        var vectors: [iovec] = []
        vectors.reserveCapacity(parts.count)
        return pinning(parts, into: &vectors, body)
    }

    private static func pinning(_ parts: ArraySlice<[UInt8]>, into vectors: inout [iovec], _ body: ([iovec]) -> Int32) -> Int32 {
        guard let first = parts.first else { return body(vectors) }
        return first.withUnsafeBytes { bytes in
            if let base = bytes.baseAddress, bytes.count > 0 {
                vectors.append(iovec(iov_base: UnsafeMutableRawPointer(mutating: base), iov_len: bytes.count))
            }
            return pinning(parts.dropFirst(), into: &vectors, body)
        }
    }

    /// `pwritev` until every vector is written.
    /// - Returns: 0, or the errno of the call that failed.
    static func writeAll(_ fd: Int32, _ vectors: [iovec], at offset: UInt64) -> Int32 {
        var cursor = Cursor(vectors)
        while !cursor.isDone {
            let n = cursor.remaining.withUnsafeBufferPointer { left in
                pwritev(fd, left.baseAddress!, Int32(left.count), off_t(offset + cursor.written))
            }
            if n < 0 {
                if errno == EINTR { continue }
                return errno
            }
            cursor.advance(by: n)
        }
        return 0
    }

    /// What of a gathered write is left after the calls so far, which may each write less
    /// than they were given (a signal, a nearly full disk, a file size limit).
    struct Cursor {
        private var vectors: [iovec]
        private var first = 0
        /// Bytes written so far.
        private(set) var written: UInt64 = 0

        init(_ vectors: [iovec]) { self.vectors = vectors }

        var isDone: Bool { first == vectors.count }

        /// The vectors still to write, the first one cut where the last call stopped.
        var remaining: ArraySlice<iovec> { vectors[first...] }

        mutating func advance(by count: Int) {
            written += UInt64(count)
            var left = count
            while first < vectors.count, left >= vectors[first].iov_len {
                left -= vectors[first].iov_len
                first += 1
            }
            guard left > 0 else { return }
            vectors[first].iov_base += left
            vectors[first].iov_len -= left
        }
    }
}

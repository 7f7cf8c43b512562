import Foundation
import Hummingbird
import NIOCore
import NIOPosix

/// `GET`/`HEAD /v1/recordings/{id}/file`: a finished recording's file as it is on disk, or
/// its object in the object store once the local copy is gone (``ObjectDownloadSource``), with
/// ranges (RFC 9110 §14), validators (`ETag`, `Last-Modified`) and the conditional requests
/// that use them (`If-None-Match`, `If-Modified-Since`, `If-Range`).
///
/// The body is streamed from disk in ``chunkBytes`` reads on a thread pool (never on the event
/// loop, never the whole file in memory), paced by the client: the next read waits for the
/// previous chunk to be written. The headers come from a `stat` of the file; the body opens
/// it and checks it is still that file (device, inode, size, modification time), so a file
/// replaced in between ends the response short instead of mixing two files under one ETag.
/// Once open, the file can be deleted: the download still gets every byte.
struct RecordingDownload: Sendable {
    static let chunkBytes = 256 * 1024

    /// What identifies one version of a file on disk.
    struct Identity: Equatable, Sendable {
        var device: UInt64
        var inode: UInt64
        var size: Int64
        var modifiedNanos: Int64

        init(_ s: stat) {
            device = UInt64(s.st_dev)
            inode = UInt64(s.st_ino)
            size = Int64(s.st_size)
            modifiedNanos = Int64(s.st_mtim.tv_sec) * 1_000_000_000 + Int64(s.st_mtim.tv_nsec)
        }

        /// Strong: it changes with any of the fields, so equal tags mean the same bytes.
        var eTag: String { "\"\(String(inode, radix: 16))-\(String(size, radix: 16))-\(String(modifiedNanos, radix: 16))\"" }
        var lastModified: Date { Date(timeIntervalSince1970: TimeInterval(modifiedNanos / 1_000_000_000)) }
        var validators: Validators { Validators(size: size, eTag: eTag, lastModified: lastModified) }
    }

    /// What the headers say about the version served, whatever holds it.
    struct Validators: Equatable, Sendable {
        var size: Int64
        /// Strong, quoted.
        var eTag: String
        var lastModified: Date
    }

    let source: any RecordingDownloadSource
    /// The name a browser saves it under.
    let downloadName: String

    init(path: String, downloadName: String, threadPool: NIOThreadPool) {
        self.init(source: FileDownloadSource(path: path, threadPool: threadPool), downloadName: downloadName)
    }

    init(source: any RecordingDownloadSource, downloadName: String) {
        self.source = source
        self.downloadName = downloadName
    }

    func response(to request: Request) async throws -> Response {
        let identity = try await source.validators()
        var headers: HTTPFields = [
            .contentType: "video/mp4",
            .acceptRanges: "bytes",
            .eTag: identity.eTag,
            .lastModified: HTTPDate.format(identity.lastModified),
            .contentDisposition: "attachment; filename=\"\(downloadName)\"",
            .cacheControl: "private, no-cache",
        ]
        if Self.notModified(request.headers, identity: identity) {
            return Response(status: .notModified, headers: headers)
        }
        let rangeHeader = Self.rangeApplies(request.headers, identity: identity) ? request.headers[.range] : nil
        let includeBody = request.method != .head
        switch ByteRangeSelection.parse(rangeHeader, size: identity.size) {
        case .unsatisfiable:
            var response = AdminAPIError(status: .rangeNotSatisfiable, code: "range_not_satisfiable",
                                         message: "no range of \(rangeHeader ?? "") lies within the file's \(identity.size) bytes").response()
            response.headers[.contentRange] = "bytes */\(identity.size)"
            response.headers[.eTag] = identity.eTag
            return response
        case .whole:
            headers[.contentLength] = String(identity.size)
            let all: [ClosedRange<Int64>] = identity.size > 0 ? [0 ... identity.size - 1] : []
            return Response(status: .ok, headers: headers, body: includeBody ? source.body(all, validators: identity, parts: nil) : ResponseBody())
        case .ranges(let ranges) where ranges.count == 1:
            let range = ranges[0]
            headers[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound)/\(identity.size)"
            headers[.contentLength] = String(range.count)
            return Response(status: .partialContent, headers: headers, body: includeBody ? source.body(ranges, validators: identity, parts: nil) : ResponseBody())
        case .ranges(let ranges):
            let parts = MultipartByteRanges(ranges: ranges, size: identity.size, contentType: "video/mp4")
            headers[.contentType] = "multipart/byteranges; boundary=\(parts.boundary)"
            headers[.contentLength] = String(parts.totalLength)
            return Response(status: .partialContent, headers: headers, body: includeBody ? source.body(ranges, validators: identity, parts: parts) : ResponseBody())
        }
    }

    // MARK: Conditional requests (RFC 9110 §13)

    /// `If-None-Match` naming this version (or `*`), or without it an `If-Modified-Since` not
    /// before the file's last change: the client has these bytes already.
    static func notModified(_ headers: HTTPFields, identity: Validators) -> Bool {
        if let tags = headers[.ifNoneMatch] {
            return tags.split(separator: ",").contains { tag in
                let t = tag.trimmingCharacters(in: .whitespaces)
                // Weak comparison (§8.8.3.2): W/"x" matches "x".
                return t == "*" || (t.hasPrefix("W/") ? String(t.dropFirst(2)) : t) == identity.eTag
            }
        }
        if let since = headers[.ifModifiedSince].flatMap(HTTPDate.parse) {
            return identity.lastModified <= since
        }
        return false
    }

    /// `If-Range` (§13.1.5): the ranges are for this version only; otherwise the whole file.
    static func rangeApplies(_ headers: HTTPFields, identity: Validators) -> Bool {
        guard let condition = headers[.ifRange]?.trimmingCharacters(in: .whitespaces) else { return true }
        if condition.hasPrefix("\"") { return condition == identity.eTag }  // strong comparison only
        return HTTPDate.parse(condition) == identity.lastModified
    }

}

/// Where a download's bytes come from: its validators, then its body for the ranges asked.
protocol RecordingDownloadSource: Sendable {
    func validators() async throws -> RecordingDownload.Validators
    /// The body of `ranges` (each framed by `parts` when there are several).
    func body(_ ranges: [ClosedRange<Int64>], validators: RecordingDownload.Validators, parts: MultipartByteRanges?) -> ResponseBody
}

/// A file on disk, read in ``RecordingDownload/chunkBytes`` reads on a thread pool.
struct FileDownloadSource: RecordingDownloadSource {
    let path: String
    let threadPool: NIOThreadPool

    func validators() async throws -> RecordingDownload.Validators {
        try await identityOnDisk().validators
    }

    private func identityOnDisk() async throws -> RecordingDownload.Identity {
        let path = self.path
        return try await threadPool.runIfActive {
            var s = stat()
            guard stat(path, &s) == 0 else {
                throw AdminAPIError(status: .notFound, code: "not_found", message: "the file \(path) is gone from disk")
            }
            return RecordingDownload.Identity(s)
        }
    }

    func body(_ ranges: [ClosedRange<Int64>], validators: RecordingDownload.Validators, parts: MultipartByteRanges?) -> ResponseBody {
        let path = self.path, pool = threadPool
        let length = parts?.totalLength ?? ranges.reduce(0) { $0 + $1.count }
        return ResponseBody(contentLength: length) { writer in
            let file = try await pool.runIfActive { try OpenFile(path: path, expecting: validators) }
            defer { file.close() }
            for (index, range) in ranges.enumerated() {
                if let parts { try await writer.write(ByteBuffer(string: parts.header(forPart: index))) }
                var offset = range.lowerBound
                while offset <= range.upperBound {
                    let count = Int(min(Int64(RecordingDownload.chunkBytes), range.upperBound - offset + 1))
                    let at = offset
                    let chunk = try await pool.runIfActive { try file.read(count: count, at: at) }
                    try await writer.write(chunk)
                    offset += Int64(count)
                }
            }
            if let parts { try await writer.write(ByteBuffer(string: parts.closing)) }
            try await writer.finish(nil)
        }
    }
}

/// A file opened for one download, checked to be the version its headers describe.
private final class OpenFile: @unchecked Sendable {
    private let descriptor: Int32
    private let path: String

    init(path: String, expecting validators: RecordingDownload.Validators) throws {
        descriptor = open(path, O_RDONLY | O_CLOEXEC)
        self.path = path
        guard descriptor >= 0 else { throw RecordingDownloadError("\(path) could not be opened: errno \(errno)") }
        var s = stat()
        guard fstat(descriptor, &s) == 0, RecordingDownload.Identity(s).validators == validators else {
            Glibc.close(descriptor)
            throw RecordingDownloadError("\(path) changed between the response's headers and its body")
        }
    }

    func read(count: Int, at offset: Int64) throws -> ByteBuffer {
        var buffer = ByteBufferAllocator().buffer(capacity: count)
        let n = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { bytes in
            max(0, pread(descriptor, bytes.baseAddress, count, off_t(offset)))
        }
        // The size was checked when the file was opened; a shorter read means it was cut since.
        guard n == count else { throw RecordingDownloadError("\(path) ended early at byte \(offset)") }
        return buffer
    }

    func close() { Glibc.close(descriptor) }
}

/// Ends a download early: the status and headers are out, so the connection closes short.
struct RecordingDownloadError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// The `multipart/byteranges` framing of several ranges (RFC 9110 §14.6).
struct MultipartByteRanges: Sendable {
    let ranges: [ClosedRange<Int64>]
    let size: Int64
    let contentType: String
    let boundary = "mcr-" + (0 ..< 4).map { _ in String(UInt32.random(in: .min ... .max), radix: 16) }.joined()

    func header(forPart index: Int) -> String {
        let range = ranges[index]
        return "\r\n--\(boundary)\r\nContent-Type: \(contentType)\r\nContent-Range: bytes \(range.lowerBound)-\(range.upperBound)/\(size)\r\n\r\n"
    }

    var closing: String { "\r\n--\(boundary)--\r\n" }

    var totalLength: Int {
        ranges.indices.reduce(closing.utf8.count) { $0 + header(forPart: $1).utf8.count + ranges[$1].count }
    }
}

/// HTTP dates (IMF-fixdate, RFC 9110 §5.6.7).
enum HTTPDate {
    private static let formatter: DateFormatter = {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "GMT")
        f.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return f
    }()
    private static let lock = NSLock()

    static func format(_ date: Date) -> String { lock.withLock { formatter.string(from: date) } }
    static func parse(_ text: String) -> Date? { lock.withLock { formatter.date(from: text.trimmingCharacters(in: .whitespaces)) } }
}

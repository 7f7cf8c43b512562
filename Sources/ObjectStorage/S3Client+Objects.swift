public import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// What HEAD (and GET) say about an object.
public struct S3ObjectInfo: Sendable, Equatable {
    public var size: Int64
    /// Without quotes: the MD5 of a single-PUT object, `MD5-of-MD5s-N` of a multipart one.
    public var etag: String
    /// `x-amz-meta-*` headers, names lower-cased without the prefix.
    public var metadata: [String: String]
    public var contentType: String?
}

/// A byte range of an object (RFC 9110 §14.1.2).
public enum S3ByteRange: Sendable, Equatable {
    /// `first...last`, both included.
    case bytes(ClosedRange<Int64>)
    /// From `offset` to the end.
    case from(Int64)
    /// The last `count` bytes.
    case suffix(Int64)

    var headerValue: String {
        switch self {
        case .bytes(let range): "bytes=\(range.lowerBound)-\(range.upperBound)"
        case .from(let offset): "bytes=\(offset)-"
        case .suffix(let count): "bytes=-\(count)"
        }
    }
}

/// A GET's answer whose body is still to be read: iterate ``body`` (chunks as they arrive).
public struct S3ObjectStream: Sendable {
    public var info: S3ObjectInfo
    public var body: HTTPClientResponse.Body
}

extension S3Client {
    /// Creates the bucket; one that already exists and is ours is fine.
    public func createBucket() async throws(S3Error) {
        let operation = Operation(method: .PUT)
        do {
            try await drain(try await send(operation), operation)
        } catch where error.code == "BucketAlreadyOwnedByYou" {
            return
        }
    }

    /// Stores `bytes` as `key` in one request (small objects: the body is in memory, hashed for
    /// the signature and `Content-MD5`). Returns the ETag.
    @discardableResult
    public func putObject(key: String, bytes: [UInt8], contentType: String? = nil, metadata: [String: String] = [:]) async throws(S3Error) -> String {
        var operation = Operation(method: .PUT, key: key, headers: Self.metadataHeaders(metadata), body: .bytes(bytes))
        if let contentType { operation.headers.append(("Content-Type", contentType)) }
        let response = try await send(operation)
        try await drain(response, operation)
        return S3ResponseDecoding.unquoted(response.headers.first(name: "ETag") ?? "")
    }

    /// The object's size, ETag and metadata; a missing object is an ``S3Error`` with code `NotFound`.
    public func headObject(key: String) async throws(S3Error) -> S3ObjectInfo {
        let operation = Operation(method: .HEAD, key: key)
        let response = try await send(operation)
        return try info(response, operation)
    }

    /// The object (or `range` of it) in memory; more than `maximumBytes` is an error, not a
    /// truncated answer. For large objects, ``getObjectStream(key:range:)``.
    public func getObject(key: String, range: S3ByteRange? = nil, maximumBytes: Int = 64 << 20) async throws(S3Error) -> [UInt8] {
        let stream = try await getObjectStream(key: key, range: range)
        let operation = Operation(method: .GET, key: key)
        guard stream.info.size <= Int64(maximumBytes) else {
            throw error(.responseTooLarge, operation, message: "the object is \(stream.info.size) bytes, over the \(maximumBytes) asked for")
        }
        do {
            return Array(try await stream.body.collect(upTo: maximumBytes).readableBytesView)
        } catch is NIOTooManyBytesError {
            throw error(.responseTooLarge, operation, message: "the body is over the \(maximumBytes) bytes asked for")
        } catch {
            throw self.error(.transport, operation, message: String(describing: error))
        }
    }

    /// Starts a GET of the object (or `range` of it): `info.size` is the size of what the body
    /// holds (the range's, for a range). The body is read as the caller iterates it; a stall is
    /// bounded by the transport's read timeout.
    public func getObjectStream(key: String, range: S3ByteRange? = nil) async throws(S3Error) -> S3ObjectStream {
        var operation = Operation(method: .GET, key: key)
        if let range { operation.headers.append(("Range", range.headerValue)) }
        // The head must come within the request timeout; the body may take as long as it needs
        // while bytes keep coming.
        operation.timeout = .hours(24)
        let response = try await send(operation)
        return S3ObjectStream(info: try info(response, operation), body: response.body)
    }

    /// Deletes the object; deleting a missing one succeeds, as in S3.
    public func deleteObject(key: String) async throws(S3Error) {
        let operation = Operation(method: .DELETE, key: key)
        try await drain(try await send(operation), operation)
    }

    /// One page of ListObjectsV2: keys under `prefix` (relative to the location's prefix, as are
    /// the keys returned), at most ``Limits/listPageSize``.
    public func listObjectsPage(prefix: String = "", continuationToken: String? = nil) async throws(S3Error) -> S3ObjectListPage {
        var query: [(name: String, value: String)] = [("list-type", "2"), ("prefix", objectKey(prefix)), ("max-keys", String(limits.listPageSize)),
                                                      ("encoding-type", "url")]
        if let continuationToken { query.append(("continuation-token", continuationToken)) }
        let operation = Operation(method: .GET, query: query)
        var page = try await decodeXML(try await send(operation), operation, S3ResponseDecoding.objectList)
        let prefixCount = location.keyPrefix.count
        for index in page.objects.indices { page.objects[index].key = String(page.objects[index].key.dropFirst(prefixCount)) }
        return page
    }

    /// Every key under `prefix`, following continuation tokens (at most ``Limits/maximumListedEntries``).
    public func listObjects(prefix: String = "") async throws(S3Error) -> [S3ObjectSummary] {
        var objects: [S3ObjectSummary] = []
        var token: String?
        repeat {
            let page = try await listObjectsPage(prefix: prefix, continuationToken: token)
            objects += page.objects
            guard objects.count <= limits.maximumListedEntries else {
                throw error(.responseTooLarge, Operation(method: .GET), message: "more than \(limits.maximumListedEntries) keys under '\(prefix)'; list them page by page")
            }
            token = page.nextContinuationToken
        } while token != nil
        return objects
    }

    /// A URL that GETs the object without credentials until `expires` seconds after `date`
    /// (now when nil), signed in its query (SigV4 query authentication).
    public func presignedGetURL(key: String, expires: Int, at date: Date? = nil) -> String {
        let path = path(key)
        let query = signer.presignedQuery(SigV4Signer.Request(method: "GET", host: location.endpoint.hostHeader, path: path, payload: .unsigned),
                                          at: date ?? now(), expires: expires)
        return url(path: path, query: query)
    }

    // MARK: Parts

    static func metadataHeaders(_ metadata: [String: String]) -> [(name: String, value: String)] {
        metadata.sorted { $0.key < $1.key }.map { ("x-amz-meta-\($0.key.lowercased())", $0.value) }
    }

    func info(_ response: HTTPClientResponse, _ operation: Operation) throws(S3Error) -> S3ObjectInfo {
        guard let length = response.headers.first(name: "Content-Length").flatMap({ Int64($0) }) else {
            throw error(.malformedResponse, operation, message: "no Content-Length")
        }
        var metadata: [String: String] = [:]
        for header in response.headers where header.name.lowercased().hasPrefix("x-amz-meta-") {
            metadata[String(header.name.lowercased().dropFirst("x-amz-meta-".count))] = header.value
        }
        return S3ObjectInfo(size: length, etag: S3ResponseDecoding.unquoted(response.headers.first(name: "ETag") ?? ""), metadata: metadata,
                            contentType: response.headers.first(name: "Content-Type"))
    }
}

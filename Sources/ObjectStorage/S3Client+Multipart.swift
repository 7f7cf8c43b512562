import Foundation
import NIOCore
import NIOHTTP1

/// S3's multipart upload, one request each (S3 API reference: CreateMultipartUpload, UploadPart,
/// CompleteMultipartUpload, AbortMultipartUpload, ListParts, ListMultipartUploads).
/// ``uploadFile(path:key:partSize:metadata:contentType:resumeUploadID:concurrency:retry:)`` puts them together.
extension S3Client {
    /// Starts a multipart upload of `key`; the metadata is the object's. Returns the upload id.
    public func createMultipartUpload(key: String, contentType: String? = nil, metadata: [String: String] = [:]) async throws(S3Error) -> String {
        var operation = Operation(method: .POST, key: key, query: [("uploads", "")], headers: Self.metadataHeaders(metadata))
        if let contentType { operation.headers.append(("Content-Type", contentType)) }
        return try await decodeXML(try await send(operation), operation, S3ResponseDecoding.initiatedUploadID)
    }

    /// Uploads `range` of the file at `path` as part `partNumber`, streamed from the file. Returns
    /// the part's ETag (its MD5, which S3 checked against the `Content-MD5` sent).
    @discardableResult
    public func uploadPart(key: String, uploadID: String, partNumber: Int, path: String, range: Range<Int64>) async throws(S3Error) -> String {
        let operation = Operation(method: .PUT, key: key)
        let file: ReadOnlyFile
        let digest: PartDigest
        do {
            file = try ReadOnlyFile(path: path)
            digest = try await PartDigest.of(file, range: range)
        } catch {
            throw self.error(.localFile, operation, message: String(describing: error))
        }
        return try await uploadPart(key: key, uploadID: uploadID, partNumber: partNumber, file: file, range: range, digest: digest)
    }

    /// The part's body is signed with its SHA-256 (`x-amz-content-sha256`) and sent with its MD5
    /// (`Content-MD5`): the server recomputes both and refuses the part (`XAmzContentSHA256Mismatch`,
    /// `BadDigest`) if a byte changed on the way. RGW 16 has no `x-amz-checksum-*` (it ignores
    /// the header), so these two are what it checks.
    func uploadPart(key: String, uploadID: String, partNumber: Int, file: ReadOnlyFile, range: Range<Int64>,
                    digest: PartDigest) async throws(S3Error) -> String {
        let operation = Operation(method: .PUT, key: key, query: [("partNumber", String(partNumber)), ("uploadId", uploadID)],
                                  body: .file(file, range, digest))
        let response = try await send(operation)
        try await drain(response, operation)
        let etag = S3ResponseDecoding.unquoted(response.headers.first(name: "ETag") ?? "")
        // The ETag of a part is its MD5: a different one means the server stored other bytes.
        guard etag == digest.md5Hex else {
            throw error(.verificationFailed, operation, message: "part \(partNumber)'s ETag is \(etag), its MD5 is \(digest.md5Hex)")
        }
        return etag
    }

    /// Makes the object from the parts, in part-number order. Returns its ETag, when the server
    /// says it (RGW 16 answers an empty one: ``headObject(key:)`` has it).
    @discardableResult
    public func completeMultipartUpload(key: String, uploadID: String, parts: [(partNumber: Int, etag: String)]) async throws(S3Error) -> String? {
        let sorted = parts.sorted { $0.partNumber < $1.partNumber }
        let operation = Operation(method: .POST, key: key, query: [("uploadId", uploadID)],
                                  body: .bytes(S3ResponseDecoding.completeMultipartUploadBody(sorted)))
        return try await decodeXML(try await send(operation), operation, S3ResponseDecoding.completedETag)
    }

    /// Drops the upload and its parts.
    public func abortMultipartUpload(key: String, uploadID: String) async throws(S3Error) {
        let operation = Operation(method: .DELETE, key: key, query: [("uploadId", uploadID)])
        try await drain(try await send(operation), operation)
    }

    /// The parts the server has for the upload (all pages; S3 allows 10 000 parts).
    public func listParts(key: String, uploadID: String) async throws(S3Error) -> [S3UploadedPart] {
        var parts: [S3UploadedPart] = []
        var marker: Int?
        repeat {
            var query: [(name: String, value: String)] = [("uploadId", uploadID), ("max-parts", String(limits.listPageSize))]
            if let marker { query.append(("part-number-marker", String(marker))) }
            let operation = Operation(method: .GET, key: key, query: query)
            let page = try await decodeXML(try await send(operation), operation, S3ResponseDecoding.partList)
            parts += page.parts
            // A marker that does not move on would list the same page for ever.
            if let next = page.nextPartNumberMarker, next <= marker ?? 0 || parts.count > MultipartPlan.maximumPartCount {
                throw error(.malformedResponse, operation, message: "ListParts does not move on (marker \(next) after \(marker ?? 0))")
            }
            marker = page.nextPartNumberMarker
        } while marker != nil
        return parts
    }

    /// Multipart uploads started under `prefix` and neither completed nor aborted (all pages,
    /// at most ``Limits/maximumListedEntries``); keys relative to the location's prefix.
    public func listMultipartUploads(prefix: String = "") async throws(S3Error) -> [S3MultipartUpload] {
        var uploads: [S3MultipartUpload] = []
        var markers: (key: String, uploadID: String)?
        repeat {
            var query: [(name: String, value: String)] = [("uploads", ""), ("prefix", objectKey(prefix)), ("max-uploads", String(limits.listPageSize)),
                                                          ("encoding-type", "url")]
            if let markers { query += [("key-marker", markers.key), ("upload-id-marker", markers.uploadID)] }
            let operation = Operation(method: .GET, query: query)
            let page = try await decodeXML(try await send(operation), operation, S3ResponseDecoding.multipartUploadList)
            uploads += page.uploads
            guard uploads.count <= limits.maximumListedEntries else {
                throw error(.responseTooLarge, operation, message: "more than \(limits.maximumListedEntries) multipart uploads under '\(prefix)'")
            }
            markers = page.nextMarkers
        } while markers != nil
        let prefixCount = location.keyPrefix.count
        return uploads.map { S3MultipartUpload(key: String($0.key.dropFirst(prefixCount)), uploadID: $0.uploadID, initiated: $0.initiated) }
    }
}

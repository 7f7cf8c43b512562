import Foundation

// The XML documents of the S3 API this client reads (S3 API reference: "Error responses",
// ListObjectsV2, ListParts, ListMultipartUploads, CreateMultipartUpload,
// CompleteMultipartUpload), decoded from an ``S3XMLElement`` tree. Sans-I/O.

/// The body of an S3 error: `<Error><Code>…</Code><Message>…</Message><RequestId>…</RequestId></Error>`.
public struct S3ErrorDocument: Sendable, Equatable {
    public var code: String
    public var message: String
    public var requestID: String?
}

extension S3ErrorDocument {
    /// nil when the root element is not `Error`.
    init?(_ root: S3XMLElement) {
        guard root.name == "Error", let code = root.text("Code") else { return nil }
        self.init(code: code, message: root.text("Message") ?? "", requestID: root.text("RequestId"))
    }
}

/// One object of a listing.
public struct S3ObjectSummary: Sendable, Equatable {
    public var key: String
    public var size: Int64
    /// Without the quotes S3 puts around it.
    public var etag: String
    public var lastModified: String?
}

/// One page of ListObjectsV2.
public struct S3ObjectListPage: Sendable, Equatable {
    public var objects: [S3ObjectSummary]
    /// Present when more keys follow: the next request's `continuation-token`.
    public var nextContinuationToken: String?
}

/// A part already stored for a multipart upload.
public struct S3UploadedPart: Sendable, Equatable {
    public var partNumber: Int
    public var etag: String
    public var size: Int64
}

/// One page of ListParts.
public struct S3PartListPage: Sendable, Equatable {
    public var parts: [S3UploadedPart]
    /// Present when more parts follow: the next request's `part-number-marker`.
    public var nextPartNumberMarker: Int?
}

/// A multipart upload that was started and neither completed nor aborted.
public struct S3MultipartUpload: Sendable, Equatable {
    public var key: String
    public var uploadID: String
    /// As S3 writes it (ISO 8601), for choosing the latest of several.
    public var initiated: String
}

/// One page of ListMultipartUploads.
public struct S3MultipartUploadListPage: Sendable, Equatable {
    public var uploads: [S3MultipartUpload]
    /// Present when more uploads follow: the next request's `key-marker` and `upload-id-marker`.
    public var nextMarkers: (key: String, uploadID: String)?

    public static func == (a: Self, b: Self) -> Bool {
        a.uploads == b.uploads && a.nextMarkers?.key == b.nextMarkers?.key && a.nextMarkers?.uploadID == b.nextMarkers?.uploadID
    }
}

enum S3ResponseDecoding {
    enum DecodingError: Error, Equatable, CustomStringConvertible {
        case unexpectedRoot(expected: String, found: String)
        case missing(String, in: String)
        case invalid(String, value: String)

        var description: String {
            switch self {
            case .unexpectedRoot(let expected, let found): "expected <\(expected)>, found <\(found)>"
            case .missing(let field, let element): "<\(element)> has no <\(field)>"
            case .invalid(let field, let value): "<\(field)> is not valid: '\(value.prefix(100))'"
            }
        }
    }

    static func objectList(_ root: S3XMLElement) throws(DecodingError) -> S3ObjectListPage {
        try expectRoot(root, "ListBucketResult")
        let urlEncoded = root.text("EncodingType") == "url"
        var objects: [S3ObjectSummary] = []
        for entry in root.children("Contents") {
            objects.append(S3ObjectSummary(key: try key(entry, urlEncoded: urlEncoded), size: try int64(entry, "Size"),
                                           etag: unquoted(entry.text("ETag") ?? ""), lastModified: entry.text("LastModified")))
        }
        let truncated = root.text("IsTruncated") == "true"
        let token = root.text("NextContinuationToken").flatMap { $0.isEmpty ? nil : $0 }
        if truncated && token == nil { throw .missing("NextContinuationToken", in: "ListBucketResult") }
        return S3ObjectListPage(objects: objects, nextContinuationToken: truncated ? token : nil)
    }

    static func partList(_ root: S3XMLElement) throws(DecodingError) -> S3PartListPage {
        try expectRoot(root, "ListPartsResult")
        var parts: [S3UploadedPart] = []
        for part in root.children("Part") {
            parts.append(S3UploadedPart(partNumber: Int(try int64(part, "PartNumber")), etag: unquoted(part.text("ETag") ?? ""),
                                        size: try int64(part, "Size")))
        }
        let truncated = root.text("IsTruncated") == "true"
        var marker: Int?
        if truncated {
            marker = Int(try int64(root, "NextPartNumberMarker"))
        }
        return S3PartListPage(parts: parts, nextPartNumberMarker: marker)
    }

    static func multipartUploadList(_ root: S3XMLElement) throws(DecodingError) -> S3MultipartUploadListPage {
        try expectRoot(root, "ListMultipartUploadsResult")
        let urlEncoded = root.text("EncodingType") == "url"
        var uploads: [S3MultipartUpload] = []
        for upload in root.children("Upload") {
            guard let id = upload.text("UploadId"), !id.isEmpty else { throw .missing("UploadId", in: "Upload") }
            uploads.append(S3MultipartUpload(key: try key(upload, urlEncoded: urlEncoded), uploadID: id, initiated: upload.text("Initiated") ?? ""))
        }
        var markers: (String, String)?
        if root.text("IsTruncated") == "true" {
            guard let key = root.text("NextKeyMarker"), !key.isEmpty else { throw .missing("NextKeyMarker", in: "ListMultipartUploadsResult") }
            let decodedKey = urlEncoded ? (urlDecoded(key) ?? key) : key
            markers = (decodedKey, root.text("NextUploadIdMarker") ?? "")
        }
        return S3MultipartUploadListPage(uploads: uploads, nextMarkers: markers)
    }

    /// CreateMultipartUpload's answer: the upload id.
    static func initiatedUploadID(_ root: S3XMLElement) throws(DecodingError) -> String {
        try expectRoot(root, "InitiateMultipartUploadResult")
        guard let id = root.text("UploadId"), !id.isEmpty else { throw .missing("UploadId", in: root.name) }
        return id
    }

    /// CompleteMultipartUpload's answer: the object's ETag (without quotes), or nil when the
    /// server leaves it empty, as RGW 16 does (`<ETag></ETag>`; HEAD has it).
    static func completedETag(_ root: S3XMLElement) throws(DecodingError) -> String? {
        try expectRoot(root, "CompleteMultipartUploadResult")
        guard let etag = root.text("ETag") else { throw .missing("ETag", in: root.name) }
        return etag.isEmpty ? nil : unquoted(etag)
    }

    /// The CompleteMultipartUpload request body: every part's number and ETag, in order.
    static func completeMultipartUploadBody(_ parts: [(partNumber: Int, etag: String)]) -> [UInt8] {
        var xml = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        for part in parts {
            xml += "<Part><PartNumber>\(part.partNumber)</PartNumber><ETag>\"\(S3XML.escape(part.etag))\"</ETag></Part>"
        }
        xml += "</CompleteMultipartUpload>"
        return Array(xml.utf8)
    }

    /// S3 quotes ETags (`"9b2cf535f27731c974343645a3985328"`), in headers and in XML.
    static func unquoted(_ etag: String) -> String {
        let trimmed = etag.trimmingCharacters(in: .whitespaces)
        guard trimmed.count >= 2, trimmed.hasPrefix("\""), trimmed.hasSuffix("\"") else { return trimmed }
        return String(trimmed.dropFirst().dropLast())
    }

    private static func expectRoot(_ root: S3XMLElement, _ name: String) throws(DecodingError) {
        guard root.name == name else { throw .unexpectedRoot(expected: name, found: root.name) }
    }

    private static func int64(_ element: S3XMLElement, _ name: String) throws(DecodingError) -> Int64 {
        guard let text = element.text(name) else { throw .missing(name, in: element.name) }
        guard let value = Int64(text.trimmingCharacters(in: .whitespaces)), value >= 0 else { throw .invalid(name, value: text) }
        return value
    }

    /// Keys are listed URL-encoded when the request asked for `encoding-type=url` and the server
    /// honoured it (the answer says so): XML 1.0 cannot carry every byte a key may hold.
    private static func key(_ element: S3XMLElement, urlEncoded: Bool) throws(DecodingError) -> String {
        guard let raw = element.text("Key"), !raw.isEmpty else { throw .missing("Key", in: element.name) }
        guard urlEncoded else { return raw }
        guard let decoded = urlDecoded(raw) else { throw .invalid("Key", value: raw) }
        return decoded
    }

    /// AWS writes a space as `+` (form encoding, as botocore's `unquote_plus` reads it back),
    /// RGW as `%20`; both write a `+` of the key as `%2B`, so `+` is always a space.
    static func urlDecoded(_ text: String) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}

import Testing
@testable import ObjectStorage

/// The XML documents S3 sends, as byte vectors: the examples of the S3 API reference with the
/// fields this client reads, plus RGW's own renderings where they differ (namespace, order).
@Suite("S3 XML documents")
struct S3XMLTests {
    static func root(_ text: String) throws -> S3XMLElement { try S3XML.parse(Array(text.utf8)) }

    @Test("An error document: code, message, request id")
    func errorDocument() throws {
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <Error><Code>NoSuchKey</Code><Message>The resource you requested does not exist</Message>\
            <Resource>/mybucket/myfoto.jpg</Resource><RequestId>4442587FB7D0A2F9</RequestId></Error>
            """
        let document = try #require(S3ErrorDocument(try Self.root(xml)))
        #expect(document == S3ErrorDocument(code: "NoSuchKey", message: "The resource you requested does not exist", requestID: "4442587FB7D0A2F9"))
        // RGW's BadDigest: no message, a request id of its own shape, a HostId.
        let rgw = #"<?xml version="1.0" encoding="UTF-8"?><Error><Code>BadDigest</Code><BucketName>b</BucketName><RequestId>tx00000d1-0065-default</RequestId><HostId>1a-default-default</HostId></Error>"#
        #expect(S3ErrorDocument(try Self.root(rgw)) == S3ErrorDocument(code: "BadDigest", message: "", requestID: "tx00000d1-0065-default"))
        // Not an error document.
        #expect(S3ErrorDocument(try Self.root("<ListBucketResult/>")) == nil)
    }

    @Test("ListObjectsV2: keys, sizes, ETags without quotes, the continuation token; URL-encoded keys decoded (RGW's %20 and AWS's +)")
    func listObjects() throws {
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
              <Name>bucket</Name><Prefix>rec/</Prefix><KeyCount>2</KeyCount><MaxKeys>2</MaxKeys><EncodingType>url</EncodingType>
              <IsTruncated>true</IsTruncated>
              <Contents><Key>rec/a%20b%2Bc.mp4</Key><LastModified>2024-05-01T10:00:00.000Z</LastModified>\
            <ETag>&quot;9b2cf535f27731c974343645a3985328&quot;</ETag><Size>434234</Size><StorageClass>STANDARD</StorageClass></Contents>
              <Contents><Key>rec/%C3%BCber+x.mp4</Key><ETag>"3d4d19a3376149f7093a8f869b7d80e3-3"</ETag><Size>12582915</Size></Contents>
              <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>
            </ListBucketResult>
            """
        let page = try S3ResponseDecoding.objectList(try Self.root(xml))
        #expect(page.objects == [
            S3ObjectSummary(key: "rec/a b+c.mp4", size: 434_234, etag: "9b2cf535f27731c974343645a3985328", lastModified: "2024-05-01T10:00:00.000Z"),
            S3ObjectSummary(key: "rec/über x.mp4", size: 12_582_915, etag: "3d4d19a3376149f7093a8f869b7d80e3-3", lastModified: nil),
        ])
        #expect(page.nextContinuationToken == "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=")

        // The last page; keys as they are when the server did not encode them.
        let last = try S3ResponseDecoding.objectList(try Self.root(
            "<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>a%b</Key><ETag>x</ETag><Size>0</Size></Contents></ListBucketResult>"))
        #expect(last.objects.map(\.key) == ["a%b"])
        #expect(last.nextContinuationToken == nil)
        #expect(try S3ResponseDecoding.objectList(try Self.root("<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>")).objects.isEmpty)
    }

    @Test("ListObjectsV2 that cannot be used: truncated without a token, a size that is not a number, the wrong document")
    func listObjectsRefused() throws {
        #expect(throws: S3ResponseDecoding.DecodingError.missing("NextContinuationToken", in: "ListBucketResult")) {
            try S3ResponseDecoding.objectList(try Self.root("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>"))
        }
        #expect(throws: S3ResponseDecoding.DecodingError.invalid("Size", value: "-1")) {
            try S3ResponseDecoding.objectList(try Self.root("<ListBucketResult><Contents><Key>k</Key><Size>-1</Size></Contents></ListBucketResult>"))
        }
        #expect(throws: S3ResponseDecoding.DecodingError.unexpectedRoot(expected: "ListBucketResult", found: "ListPartsResult")) {
            try S3ResponseDecoding.objectList(try Self.root("<ListPartsResult/>"))
        }
    }

    @Test("ListParts: numbers, ETags and sizes; the next marker only when truncated")
    func listParts() throws {
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <ListPartsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
              <Bucket>b</Bucket><Key>k</Key><UploadId>2~abc</UploadId>
              <PartNumberMarker>0</PartNumberMarker><NextPartNumberMarker>2</NextPartNumberMarker><MaxParts>2</MaxParts>
              <IsTruncated>true</IsTruncated>
              <Part><PartNumber>1</PartNumber><LastModified>2024-05-01T10:00:00.000Z</LastModified>\
            <ETag>"7778aef83f66abc1fa1e8477f296d394"</ETag><Size>5242880</Size></Part>
              <Part><PartNumber>2</PartNumber><ETag>"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"</ETag><Size>5242880</Size></Part>
            </ListPartsResult>
            """
        let page = try S3ResponseDecoding.partList(try Self.root(xml))
        #expect(page.parts == [S3UploadedPart(partNumber: 1, etag: "7778aef83f66abc1fa1e8477f296d394", size: 5_242_880),
                               S3UploadedPart(partNumber: 2, etag: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", size: 5_242_880)])
        #expect(page.nextPartNumberMarker == 2)
        // RGW sends NextPartNumberMarker on the last page too; it means nothing there.
        let last = try S3ResponseDecoding.partList(try Self.root(
            "<ListPartsResult><NextPartNumberMarker>3</NextPartNumberMarker><IsTruncated>false</IsTruncated></ListPartsResult>"))
        #expect(last == S3PartListPage(parts: [], nextPartNumberMarker: nil))
        #expect(throws: S3ResponseDecoding.DecodingError.missing("NextPartNumberMarker", in: "ListPartsResult")) {
            try S3ResponseDecoding.partList(try Self.root("<ListPartsResult><IsTruncated>true</IsTruncated></ListPartsResult>"))
        }
    }

    @Test("ListMultipartUploads: keys, upload ids, initiation times, the next markers")
    func listMultipartUploads() throws {
        let xml = """
            <ListMultipartUploadsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
              <Bucket>b</Bucket><KeyMarker></KeyMarker><UploadIdMarker></UploadIdMarker>
              <NextKeyMarker>rec/b%20c.mp4</NextKeyMarker><NextUploadIdMarker>2~xyz</NextUploadIdMarker>
              <EncodingType>url</EncodingType><MaxUploads>2</MaxUploads><IsTruncated>true</IsTruncated>
              <Upload><Key>rec/a.mp4</Key><UploadId>2~abc</UploadId><Initiated>2024-05-01T10:00:00.000Z</Initiated></Upload>
              <Upload><Key>rec/b%20c.mp4</Key><UploadId>2~xyz</UploadId><Initiated>2024-05-01T11:00:00.000Z</Initiated></Upload>
            </ListMultipartUploadsResult>
            """
        let page = try S3ResponseDecoding.multipartUploadList(try Self.root(xml))
        #expect(page.uploads == [S3MultipartUpload(key: "rec/a.mp4", uploadID: "2~abc", initiated: "2024-05-01T10:00:00.000Z"),
                                 S3MultipartUpload(key: "rec/b c.mp4", uploadID: "2~xyz", initiated: "2024-05-01T11:00:00.000Z")])
        #expect(page.nextMarkers?.key == "rec/b c.mp4")
        #expect(page.nextMarkers?.uploadID == "2~xyz")
        #expect(try S3ResponseDecoding.multipartUploadList(try Self.root(
            "<ListMultipartUploadsResult><IsTruncated>false</IsTruncated></ListMultipartUploadsResult>")).nextMarkers == nil)
        #expect(throws: S3ResponseDecoding.DecodingError.missing("UploadId", in: "Upload")) {
            try S3ResponseDecoding.multipartUploadList(try Self.root("<ListMultipartUploadsResult><Upload><Key>k</Key></Upload></ListMultipartUploadsResult>"))
        }
    }

    @Test("InitiateMultipartUploadResult and CompleteMultipartUploadResult")
    func multipartResults() throws {
        let initiated = """
            <?xml version="1.0" encoding="UTF-8"?>
            <InitiateMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">\
            <Bucket>b</Bucket><Key>rec/a.mp4</Key><UploadId>2~VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA</UploadId>\
            </InitiateMultipartUploadResult>
            """
        #expect(try S3ResponseDecoding.initiatedUploadID(try Self.root(initiated)) == "2~VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA")
        #expect(throws: S3ResponseDecoding.DecodingError.missing("UploadId", in: "InitiateMultipartUploadResult")) {
            try S3ResponseDecoding.initiatedUploadID(try Self.root("<InitiateMultipartUploadResult><UploadId/></InitiateMultipartUploadResult>"))
        }
        let completed = """
            <CompleteMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
              <Location>http://127.0.0.1:7480/b/rec/a.mp4</Location><Bucket>b</Bucket><Key>rec/a.mp4</Key>
              <ETag>&quot;3d4d19a3376149f7093a8f869b7d80e3-3&quot;</ETag>
            </CompleteMultipartUploadResult>
            """
        #expect(try S3ResponseDecoding.completedETag(try Self.root(completed)) == "3d4d19a3376149f7093a8f869b7d80e3-3")
        // RGW 16's answer, byte for byte: the ETag left empty.
        let rgw = #"<?xml version="1.0" encoding="UTF-8"?><CompleteMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">"#
            + "<Location>http://127.0.0.1:34491/dbg/f6</Location><Bucket>dbg</Bucket><Key>f6</Key><ETag></ETag></CompleteMultipartUploadResult>"
        #expect(try S3ResponseDecoding.completedETag(try Self.root(rgw)) == nil)
    }

    @Test("The CompleteMultipartUpload body lists the parts in order, ETags quoted and escaped")
    func completeBody() {
        let body = String(decoding: S3ResponseDecoding.completeMultipartUploadBody([(1, "aa"), (2, "b<&>")]), as: UTF8.self)
        #expect(body == #"<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/">"#
            + #"<Part><PartNumber>1</PartNumber><ETag>"aa"</ETag></Part><Part><PartNumber>2</PartNumber><ETag>"b&lt;&amp;&gt;"</ETag></Part>"#
            + "</CompleteMultipartUpload>")
    }

    @Test("Limits: size, element count and depth are checked; malformed XML and entities are refused")
    func limits() throws {
        var limits = S3XML.Limits()
        limits.maximumBytes = 10
        #expect(throws: S3XML.ParseError.tooLarge(11)) { try S3XML.parse(Array("<a>bbbb</a>".utf8), limits: limits) }
        limits = S3XML.Limits()
        limits.maximumElements = 3
        #expect(throws: S3XML.ParseError.tooManyElements) { try S3XML.parse(Array("<a><b/><b/><b/></a>".utf8), limits: limits) }
        #expect(throws: S3XML.ParseError.tooDeep) {
            try S3XML.parse(Array((String(repeating: "<a>", count: 9) + String(repeating: "</a>", count: 9)).utf8))
        }
        #expect(throws: S3XML.ParseError.self) { try S3XML.parse(Array("<a><b></a>".utf8)) }
        #expect(throws: S3XML.ParseError.self) { try S3XML.parse([UInt8]()) }
        // An external entity is not fetched: its text never appears.
        let external = #"<?xml version="1.0"?><!DOCTYPE a [<!ENTITY x SYSTEM "file:///etc/hostname">]><a>&x;</a>"#
        // Refusing the document and parsing it without the entity are both safe; only fetching it is not.
        let parsed = try? S3XML.parse(Array(external.utf8))
        #expect(parsed == nil || parsed?.text == "")
    }

    @Test("Entities and CDATA join into one text (XMLParser reports them in pieces)")
    func textAcrossCallbacks() throws {
        let root = try Self.root("<Error><Code>Bad&amp;Digest</Code><Message>a &lt; b<![CDATA[ & c]]></Message></Error>")
        #expect(root.text("Code") == "Bad&Digest")
        #expect(root.text("Message") == "a < b & c")
    }
}

import Foundation
import Testing
@testable import ObjectStorage

/// Byte vectors for the pieces botocore's comparison cannot isolate.
@Suite("SigV4 pieces")
struct SigV4VectorTests {
    @Test func encodingKeepsOnlyUnreservedCharacters() {
        #expect(SigV4Encoding.path("/a b/ü/x+y=z~_.-/") == "/a%20b/%C3%BC/x%2By%3Dz~_.-/")
        #expect(SigV4Encoding.path("") == "/")
        #expect(SigV4Encoding.queryComponent("x/y z*") == "x%2Fy%20z%2A")
    }

    @Test func queryItemsAreSortedByEncodedNameThenValue() {
        let query = SigV4Signer.canonicalQuery([("b", "2"), ("a", "z"), ("a", ""), ("A", "1"), ("a b", "/")])
        #expect(query == "A=1&a=&a=z&a%20b=%2F&b=2")
    }

    @Test func headersAreLowercasedTrimmedCollapsedAndJoined() {
        let (lines, names) = SigV4Signer.canonicalHeaders(host: "h:1", [("X-Amz-Meta-A", "  one   two "), ("x-amz-meta-a", "three"),
                                                                        ("User-Agent", "skipped"), ("Content-Type", "a\tb")])
        #expect(lines == "content-type:a b\nhost:h:1\nx-amz-meta-a:one two,three\n")
        #expect(names == "content-type;host;x-amz-meta-a")
    }

    @Test func theTimestampIsUTC() {
        #expect(SigV4Signer.timestamp(Date(timeIntervalSince1970: 1_369_353_600)) == "20130524T000000Z")
    }

    @Test func aChunkFrameIsHexSizeSignatureAndData() {
        #expect(SigV4Signer.chunkFrame([1, 2, 3], signature: "ab") == Array("3;chunk-signature=ab\r\n".utf8) + [1, 2, 3] + Array("\r\n".utf8))
        #expect(SigV4Signer.chunkFrame([], signature: "cd") == Array("0;chunk-signature=cd\r\n\r\n".utf8))
    }
}

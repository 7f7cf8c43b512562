import Foundation
import Logging
@testable import RecordServerCore
import Testing
import TestSupport

/// `GET`/`HEAD /v1/recordings/{id}/file` (issue 17's content API, first part): a real admin
/// listener on loopback serving a real file, checked with curl (a client we did not write)
/// and URLSession, byte for byte against the file on disk.
@Suite("Recording download")
struct RecordingDownloadTests {
    /// 1.5 MiB of a pattern that does not repeat within it (so a misplaced range shows), served as
    /// recording `r-1`.
    private static func withFile<T>(_ body: (AdminClient, String, Data) async throws -> T) async throws -> T {
        let directory = try TemporaryDirectory(prefix: "download")
        let path = directory.path + "/recording.mp4"
        let bytes = Data((0 ..< 1_572_864).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 13) })
        try bytes.write(to: URL(fileURLWithPath: path))
        return try await withAdminServer(backend: FakeAdminBackend(files: ["r-1": path])) { client in try await body(client, path, bytes) }
    }

    private static func curl(_ arguments: [String], token: String? = adminToken) async throws -> ToolOutput {
        try await runToolOffPool("curl", ["-s"] + (token.map { ["-H", "Authorization: Bearer \($0)"] } ?? []) + arguments)
    }

    @Test func theWholeFileIsByteIdenticalWithItsValidators() async throws {
        try await Self.withFile { client, path, bytes in
            let directory = try TemporaryDirectory(prefix: "download-out")
            let out = directory.path + "/got.mp4"
            let fetched = try await Self.curl(["-D", "-", "-o", out, "http://127.0.0.1:\(client.port)/v1/recordings/r-1/file"])
            #expect(fetched.status == 0, "\(fetched.stderr)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: out)) == bytes, "curl's copy differs from the file on disk")
            #expect(try runTool("cmp", [path, out]).status == 0)
            let head = fetched.stdoutText.lowercased()
            for expected in ["http/1.1 200", "content-type: video/mp4", "accept-ranges: bytes", "content-length: \(bytes.count)",
                             "etag: \"", "last-modified: ", "content-disposition: attachment; filename=\"r-1.mp4\""] {
                #expect(head.contains(expected), "no \(expected) in\n\(fetched.stdoutText)")
            }
        }
    }

    @Test func headSaysWhatAGetWouldSendWithoutTheBody() async throws {
        try await Self.withFile { client, _, bytes in
            let get = try await client.send("GET", "/v1/recordings/r-1/file")
            let head = try await Self.curl(["-I", "http://127.0.0.1:\(client.port)/v1/recordings/r-1/file"])
            let text = head.stdoutText.lowercased()
            #expect(text.hasPrefix("http/1.1 200"), "\(head.stdoutText)")
            #expect(text.contains("content-length: \(bytes.count)"))
            #expect(text.contains("etag: \(try #require(get.header("ETag")).lowercased())"))
            let anonymous = try await Self.curl(["-I", "http://127.0.0.1:\(client.port)/v1/recordings/r-1/file"], token: nil)
            #expect(anonymous.stdoutText.hasPrefix("HTTP/1.1 401"), "\(anonymous.stdoutText)")
        }
    }

    @Test(arguments: [
        ("bytes=0-99", 0 ..< 100),
        ("bytes=1000-", 1000 ..< 1_572_864),
        ("bytes=-4096", 1_572_864 - 4096 ..< 1_572_864),
        ("bytes=1572800-99999999999999999999", 1_572_800 ..< 1_572_864),  // an end past the file is the file's end
        ("bytes=-99999999", 0 ..< 1_572_864),  // a suffix longer than the file is all of it
        ("bytes= 5-9 ", 5 ..< 10),
    ])
    func oneRangeIsPartialContent(header: String, expected: Range<Int>) async throws {
        try await Self.withFile { client, _, bytes in
            let result = try await client.send("GET", "/v1/recordings/r-1/file", headers: ["Range": header])
            #expect(result.status == 206, "\(header)")
            #expect(result.header("Content-Range") == "bytes \(expected.lowerBound)-\(expected.upperBound - 1)/\(bytes.count)")
            #expect(result.body == bytes[expected], "\(header): \(result.body.count) bytes")
        }
    }

    @Test(arguments: ["bytes=1572864-", "bytes=2000000-3000000", "bytes=-0", "bytes=1572864-1572864,1600000-"])
    func rangesPastTheEndAre416(header: String) async throws {
        try await Self.withFile { client, _, bytes in
            let result = try await client.send("GET", "/v1/recordings/r-1/file", headers: ["Range": header])
            #expect(result.status == 416, "\(header)")
            #expect(result.header("Content-Range") == "bytes */\(bytes.count)")
            #expect(try result.errorCode() == "range_not_satisfiable")
        }
    }

    /// A Range this server does not understand (another unit, bad syntax) is ignored, as
    /// RFC 9110 §14.2 asks: the whole file.
    @Test(arguments: ["items=0-9", "bytes=abc", "bytes=9-5", "bytes=+1-2", "bytes=-", "bytes=" + Array(repeating: "0-0", count: 100).joined(separator: ",")])
    func aRangeThatIsNotUnderstoodGetsTheWholeFile(header: String) async throws {
        try await Self.withFile { client, _, bytes in
            let result = try await client.send("GET", "/v1/recordings/r-1/file", headers: ["Range": header])
            #expect(result.status == 200, "\(header.prefix(40))")
            #expect(result.body == bytes)
        }
    }

    @Test func severalRangesAreMultipartWithEachPartAtItsPlace() async throws {
        try await Self.withFile { client, _, bytes in
            // Out of order and overlapping: sent sorted, the overlap merged.
            let result = try await client.send("GET", "/v1/recordings/r-1/file", headers: ["Range": "bytes=-10,0-9,5-19,1000000-1000099"])
            #expect(result.status == 206)
            let type = try #require(result.header("Content-Type"))
            let boundary = try #require(type.components(separatedBy: "boundary=").last)
            #expect(type.hasPrefix("multipart/byteranges"))
            #expect(Int(result.header("Content-Length") ?? "") == result.body.count)
            let parts = Self.parts(of: result.body, boundary: boundary)
            #expect(parts.map(\.range) == ["bytes 0-19/1572864", "bytes 1000000-1000099/1572864", "bytes 1572854-1572863/1572864"])
            #expect(parts.map(\.body) == [bytes[0 ..< 20], bytes[1_000_000 ..< 1_000_100], bytes[1_572_854 ..< 1_572_864]].map { Data($0) })
        }
    }

    @Test func validatorsMakeConditionalRequestsWork() async throws {
        try await Self.withFile { client, path, bytes in
            let first = try await client.send("GET", "/v1/recordings/r-1/file")
            let tag = try #require(first.header("ETag"))
            let modified = try #require(first.header("Last-Modified"))
            #expect(try await client.send("GET", "/v1/recordings/r-1/file", headers: ["If-None-Match": tag]).status == 304)
            #expect(try await client.send("GET", "/v1/recordings/r-1/file", headers: ["If-None-Match": "\"other\", W/\(tag)"]).status == 304)
            #expect(try await client.send("GET", "/v1/recordings/r-1/file", headers: ["If-Modified-Since": modified]).status == 304)
            let resumed = try await client.send("GET", "/v1/recordings/r-1/file", headers: ["Range": "bytes=10-19", "If-Range": tag])
            #expect(resumed.status == 206 && resumed.body == bytes[10 ..< 20])
            // The file changed (another size, another time): the old tag no longer matches,
            // so a resumed download gets the whole new file instead of a mix of two.
            try Data(bytes.prefix(1000)).write(to: URL(fileURLWithPath: path))
            let changed = try await client.send("GET", "/v1/recordings/r-1/file", headers: ["Range": "bytes=10-19", "If-Range": tag])
            #expect(changed.status == 200 && changed.body == bytes.prefix(1000))
            #expect(changed.header("ETag") != tag)
            #expect(try await client.send("GET", "/v1/recordings/r-1/file", headers: ["If-None-Match": tag]).status == 200)
        }
    }

    @Test func aLiveOrMissingRecordingIsNotServed() async throws {
        try await Self.withFile { client, _, _ in
            let live = try await client.send("GET", "/v1/recordings/busy-1/file")
            #expect(live.status == 409)
            #expect(try live.errorCode() == "conflict")
            let missing = try await client.send("GET", "/v1/recordings/missing-1/file")
            #expect(missing.status == 404)
            #expect(try missing.errorCode() == "not_found")
            for path in ["/v1/recordings/..%2F..%2Fetc%2Fpasswd/file", "/v1/recordings/%2e%2e/file", "/v1/recordings/../../etc/passwd/file"] {
                let result = try await client.send("GET", path)
                #expect([400, 404].contains(result.status), "\(path): \(result.status)")
                #expect(!String(decoding: result.body, as: UTF8.self).contains("root:"), "\(path) served /etc/passwd")
            }
        }
    }

    /// The part headers and bodies of a `multipart/byteranges` body.
    private static func parts(of body: Data, boundary: String) -> [(range: String, body: Data)] {
        let delimiter = Data("\r\n--\(boundary)".utf8)
        var result: [(String, Data)] = []
        var rest = body[...]
        while let start = rest.range(of: delimiter) {
            rest = rest[start.upperBound...]
            guard !rest.starts(with: Data("--".utf8)), let headerEnd = rest.range(of: Data("\r\n\r\n".utf8)) else { break }
            let header = String(decoding: rest[..<headerEnd.lowerBound], as: UTF8.self)
            let range = header.split(separator: "\r\n").first { $0.hasPrefix("Content-Range: ") }.map { String($0.dropFirst(15)) } ?? ""
            rest = rest[headerEnd.upperBound...]
            let end = rest.range(of: delimiter)?.lowerBound ?? rest.endIndex
            result.append((range, Data(rest[..<end])))
            rest = rest[end...]
        }
        return result
    }
}

/// `ByteRangeSelection` alone: what each `Range` means for a file of a given size.
@Suite("Range header")
struct ByteRangeSelectionTests {
    @Test(arguments: [
        (nil, 100, ByteRangeSelection.whole),
        ("bytes=0-0", 100, .ranges([0 ... 0])),
        ("BYTES=10-", 100, .ranges([10 ... 99])),
        ("bytes=-1", 100, .ranges([99 ... 99])),
        ("bytes=0-9,10-19", 100, .ranges([0 ... 19])),  // adjacent: one range
        ("bytes=50-59,0-9", 100, .ranges([0 ... 9, 50 ... 59])),  // sorted
        ("bytes=0-9,200-", 100, .ranges([0 ... 9])),  // the part past the end is dropped
        ("bytes=100-", 100, .unsatisfiable),
        ("bytes=-5", 0, .unsatisfiable),  // an empty file has no last bytes
        ("bytes=0-", 0, .unsatisfiable),
        ("bytes=99999999999999999999-", 100, .unsatisfiable),  // past Int64: past the end
        ("bytes=0-99999999999999999999", 100, .ranges([0 ... 99])),
        ("bytes=5-1", 100, .whole),  // invalid: ignored
        ("bytes=1-2,x", 100, .whole),
        ("bytes 0-1", 100, .whole),
    ] as [(String?, Int64, ByteRangeSelection)])
    func selection(header: String?, size: Int64, expected: ByteRangeSelection) {
        #expect(ByteRangeSelection.parse(header, size: size) == expected, "\(header ?? "nil") of \(size)")
    }

    @Test func seventeenSeparateRangesGetTheWholeFile() {
        let many = (0 ..< 17).map { "\($0 * 10)-\($0 * 10)" }.joined(separator: ",")
        #expect(ByteRangeSelection.parse("bytes=" + many, size: 1000) == .whole)
        let sixteen = (0 ..< 16).map { "\($0 * 10)-\($0 * 10)" }.joined(separator: ",")
        let separate: [ClosedRange<Int64>] = (0 ..< 16).map { (n: Int64) in n * 10 ... n * 10 }
        #expect(ByteRangeSelection.parse("bytes=" + sixteen, size: 1000) == .ranges(separate))
    }
}

/// The registry's side: what it hands the download route, and what it refuses.
@Suite("Recording download: which files")
struct RecordingDownloadFileTests {
    @Test func onlyFinishedFilesInsideTheDataDirectoryAreServed() async throws {
        let temporary = try TemporaryDirectory(prefix: "download-registry")
        let data = temporary.path + "/data"
        try FileManager.default.createDirectory(atPath: data + "/s-1", withIntermediateDirectories: true)
        let catalog = try Catalog(path: temporary.path + "/catalog.sqlite")
        let registry = SessionRegistry(catalog: catalog, settings: SessionSettings(), maxSessions: 4, metrics: ServerMetrics(),
                                       logger: Logger(label: "download") { _ in SwiftLogNoOpLogHandler() }, dataDirectory: data) { _, id, _ in
            (data + "/" + id.value, "recording")
        }
        try catalog.insertSession(SessionRecord(id: "s-1", agentID: "cam-1", labels: [:], status: .completed, createdAt: Date(), directory: data + "/s-1"))
        func row(_ id: String, _ path: String, _ status: RecordingStatus) throws {
            try catalog.upsertRecording(RecordingRecord(id: id, sessionID: "s-1", agentID: "cam-1", segmentIndex: 0, path: path,
                                                        status: status, createdAt: Date()))
        }
        let inside = data + "/s-1/recording.mp4"
        try Data("mp4".utf8).write(to: URL(fileURLWithPath: inside))
        try row("s-1-0", data + "/s-1/../s-1/recording.mp4", .completed)
        #expect(try await registry.finishedRecordingFile(id: "s-1-0") == inside)

        // A row or a symlink that leads out of the data directory is not followed.
        let outside = temporary.path + "/secret.mp4"
        try Data("secret".utf8).write(to: URL(fileURLWithPath: outside))
        try FileManager.default.createSymbolicLink(atPath: data + "/s-1/link.mp4", withDestinationPath: outside)
        try row("s-1-1", data + "/s-1/link.mp4", .completed)
        try row("s-1-2", data + "/../secret.mp4", .completed)
        for id in ["s-1-1", "s-1-2"] {
            await #expect(throws: AdminError(.notFound, "the file of recording \(id) is not inside the data directory")) {
                try await registry.finishedRecordingFile(id: id)
            }
        }
        try row("s-1-3", data + "/s-1/gone.mp4", .completed)
        await #expect(throws: AdminError(.notFound, "the file of recording s-1-3 is gone from disk (\(data)/s-1/gone.mp4)")) {
            try await registry.finishedRecordingFile(id: "s-1-3")
        }
        try row("s-1-4", inside, .recording)
        await #expect(throws: AdminError.self) { try await registry.finishedRecordingFile(id: "s-1-4") }
    }
}

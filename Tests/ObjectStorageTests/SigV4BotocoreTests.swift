import Foundation
import Shared
import Testing
import TestSupport
@testable import ObjectStorage

/// Our SigV4 signer against an independent one: botocore (AWS's Python SDK core), given the same
/// requests — every method, paths with characters that need encoding, repeated and empty query
/// items, headers with odd white space and repeated names, body-hashed, unsigned and streaming
/// payloads, temporary credentials, presigned URLs — by `scripts/lib/sigv4_reference.py`. Chunk
/// signatures, which botocore does not make, come from the same script's hmac/hashlib rendering
/// of the S3 reference's chunked-upload page.
@Suite("SigV4 against botocore")
struct SigV4BotocoreTests {
    struct Case {
        var request: SigV4Signer.Request
        var body: [UInt8]
        var chunks: [[UInt8]]
        var date: Date
        var region: String
        var credentials: S3Credentials
        var presignExpires: Int?
    }

    static let pathPieces = ["recordings", "a b", "über", "日本", "x+y=z", "100%", "~tilde", "it's", "(1)", "a*b", "semi;colon",
                             "comma,here", "q?mark", "hash#tag", "at@sign", "dollar$", "col:on", "", "UPPER", "seg.ment-1_2"]
    static let queryNames = ["uploadId", "partNumber", "prefix", "list-type", "a b", "x/y", "ü", "delimiter", "max-keys", "empty", "uploads"]
    static let queryValues = ["1", "", "2~3", "a b", "x/y/z", "ünï", "=&?", "+plus", "*", "VXBsb2Fk.ID_-", "0"]
    static let headerNames = ["Content-Type", "x-amz-meta-Camera", "Range", "content-md5", "X-Amz-Meta-note", "Cache-Control",
                              "x-amz-storage-class", "If-None-Match", "User-Agent", "Expect"]
    static let headerValues = ["video/mp4", "  front  camera ", "bytes=0-1023", "1B2M2Y8AsgTpgAmY7PhCfg==", "a\tb  c", "no-cache",
                               "STANDARD", "*", "record-server/1.0", "100-continue"]

    static func cases() -> [Case] {
        var random = SplitMix64(seed: 0x5167_4456)
        func pick<T>(_ items: [T]) -> T { items[Int(random.next() % UInt64(items.count))] }
        var cases: [Case] = []
        for index in 0..<64 {
            let method = pick(["GET", "PUT", "POST", "DELETE", "HEAD"])
            let depth = 1 + Int(random.next() % 4)
            var path = "/bucket-\(index % 3)/" + (0..<depth).map { _ in pick(pathPieces) }.joined(separator: "/")
            if index % 7 == 0 { path += "/" }
            let query = (0..<Int(random.next() % 4)).map { _ in (name: pick(queryNames), value: pick(queryValues)) }
            var headers = (0..<Int(random.next() % 4)).map { _ in (name: pick(headerNames), value: pick(headerValues)) }
            let body = (0..<Int(random.next() % 300)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            var chunks: [[UInt8]] = []
            let payload: SigV4Signer.Payload
            switch index % 3 {
            case 0: payload = .body(body)
            case 1: payload = .unsigned
            default:
                chunks = (0..<(1 + Int(random.next() % 3))).map { _ in (0..<(1 + Int(random.next() % 200))).map { _ in UInt8(truncatingIfNeeded: random.next()) } }
                headers.append((name: "Content-Encoding", value: "aws-chunked"))
                headers.append((name: "x-amz-decoded-content-length", value: String(chunks.reduce(0) { $0 + $1.count })))
                payload = .streaming
            }
            let host = pick(["127.0.0.1:7480", "s3.example.test", "bucket.s3.eu-west-1.example.test:8443", "[::1]:9000"])
            let date = Date(timeIntervalSince1970: 1_369_353_600 + Double(random.next() % 400_000_000))
            let credentials = S3Credentials(accessKeyID: "AKIA\(index)EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCY\(index)KEY",
                                            sessionToken: index % 5 == 0 ? "FQoGZXIvYXdzE\(index)//token+/=" : nil)
            let request = SigV4Signer.Request(method: method, host: host, path: path, query: query, headers: headers, payload: payload)
            cases.append(Case(request: request, body: index % 3 == 0 ? body : [], chunks: chunks, date: date,
                              region: pick(["us-east-1", "eu-west-1", "default"]), credentials: credentials,
                              presignExpires: index % 4 == 0 ? 1 + Int(random.next() % 604_800) : nil))
        }
        return cases
    }

    /// botocore's presigner keeps only the first value of a repeated query name (it parses the
    /// query into a dictionary); S3 presigned URLs never repeat one, so those cases compare that.
    static func firstOfEachName(_ query: [(name: String, value: String)]) -> [(name: String, value: String)] {
        var seen: Set<String> = []
        return query.filter { seen.insert($0.name).inserted }
    }

    static func json(_ c: Case) -> [String: Any] {
        let payload: [String: Any]
        switch c.request.payload {
        case .hash: payload = ["body": Data(c.body).base64EncodedString()]
        case .unsigned: payload = ["unsigned": true]
        case .streaming: payload = ["streaming": c.chunks.map { Data($0).base64EncodedString() }]
        }
        return ["method": c.request.method, "host": c.request.host, "path": c.request.path,
                "query": c.request.query.map { [$0.name, $0.value] }, "headers": c.request.headers.map { [$0.name, $0.value] },
                "payload": payload, "date": SigV4Signer.timestamp(c.date), "region": c.region,
                "access_key": c.credentials.accessKeyID, "secret_key": c.credentials.secretAccessKey,
                "token": c.credentials.sessionToken as Any, "presign_expires": c.presignExpires as Any]
    }

    @Test("64 generated requests: the Authorization header, presigned URLs and chunk signatures agree with botocore")
    func agreesWithBotocore() throws {
        let cases = Self.cases()
        let scratch = try TemporaryDirectory(prefix: "sigv4")
        let input = scratch.fileURL("cases.json")
        try JSONSerialization.data(withJSONObject: cases.map(Self.json)).write(to: input)
        let script = BuiltProducts.repositoryRoot.appendingPathComponent("scripts/lib/sigv4_reference.py").path
        // The test command's environment has botocore pinned (scripts/bootstrap.sh); by hand, any python3 with botocore.
        let pinned = Schemathesis.environment + "/bin/python"
        let python = FileManager.default.fileExists(atPath: Schemathesis.environment + "/.botocore-installed") ? pinned : "python3"
        let output = try runTool(python, [script, input.path])
        guard output.status == 0 else {
            throw ToolError.failed("sigv4_reference.py with \(python) (needs botocore: BOOTSTRAP_FOR_TESTS=1 source scripts/bootstrap.sh)", output)
        }
        let references = try #require(try JSONSerialization.jsonObject(with: output.stdout) as? [[String: Any]])
        try #require(references.count == cases.count)
        var presigned = 0, chunkSignatures = 0
        for (index, (c, reference)) in zip(cases, references).enumerated() {
            let signer = SigV4Signer(credentials: c.credentials, region: c.region)
            let signed = signer.sign(c.request, at: c.date)
            #expect(signed.authorization == reference["authorization"] as? String,
                    "case \(index) \(c.request.method) \(c.request.path)\ncanonical request:\n\(signed.canonicalRequest)")
            #expect(signed.headers.first { $0.name == "x-amz-content-sha256" }?.value == reference["x_amz_content_sha256"] as? String)
            if let expires = c.presignExpires {
                let query = signer.presignedQuery(SigV4Signer.Request(method: c.request.method, host: c.request.host, path: c.request.path,
                                                                     query: Self.firstOfEachName(c.request.query), payload: .unsigned),
                                                  at: c.date, expires: expires)
                #expect(query.last?.value == reference["presigned_signature"] as? String, "case \(index): presigned")
                presigned += 1
            }
            if c.request.payload == .streaming {
                var previous = signed.signature
                var ours: [String] = []
                for chunk in c.chunks + [[]] {
                    previous = signer.chunkSignature(previous: previous, chunk: chunk, at: c.date)
                    ours.append(previous)
                }
                #expect(ours == reference["chunk_signatures"] as? [String], "case \(index): chunk signatures")
                chunkSignatures += ours.count
            }
        }
        #expect(presigned >= 10 && chunkSignatures >= 20, "\(presigned) presigned, \(chunkSignatures) chunk signatures compared")
        print("sigv4: \(cases.count) requests, \(presigned) presigned URLs and \(chunkSignatures) chunk signatures agree with botocore")
    }
}

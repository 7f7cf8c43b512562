import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import Shared
import TestSupport
@testable import ObjectStorage

/// Clients of the shared RADOS Gateway (``ObjectStoreFixture``) for the integration suites.
enum RGW {
    /// One HTTP client for the whole test process (a static is never deinitialised, so it needs
    /// no shutdown).
    static let httpClient = HTTPClientTransport.makeHTTPClient(readTimeout: .seconds(30))

    /// A client of a new bucket (created) on the shared store.
    static func client(bucket purpose: String, transport: (any S3Transport)? = nil,
                       sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }) async throws -> S3Client {
        let store = try await ObjectStoreFixture.shared()
        let bucket = ObjectStoreFixture.uniqueBucket(purpose)
        let client = try client(store, bucket: bucket, transport: transport, sleep: sleep)
        try await client.createBucket()
        return client
    }

    /// A client of `bucket` on `store`, its location parsed as an operator writes it.
    static func client(_ store: ObjectStoreFixture, bucket: String, transport: (any S3Transport)? = nil,
                       sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }) throws -> S3Client {
        let location = try S3Location(parsing: "s3://\(bucket)?endpoint=\(store.endpoint)")
        let credentials = try S3Credentials.load(accessKeyFile: store.accessKeyFile, secretKeyFile: store.secretKeyFile)
        return S3Client(location: location, credentials: credentials, transport: transport ?? HTTPClientTransport(client: httpClient), sleep: sleep)
    }

    /// A file of `size` pseudo-random bytes (seeded: the same each run); returns its path and SHA-256.
    static func randomFile(in dir: TemporaryDirectory, name: String, size: Int, seed: UInt64) throws -> (path: String, sha256: [UInt8]) {
        var random = SplitMix64(seed: seed)
        var bytes = [UInt8](repeating: 0, count: size)
        bytes.withUnsafeMutableBytes { raw in
            var index = 0
            while index + 8 <= size {
                raw.storeBytes(of: random.next(), toByteOffset: index, as: UInt64.self)
                index += 8
            }
            while index < size {
                raw[index] = UInt8(truncatingIfNeeded: random.next())
                index += 1
            }
        }
        return (try dir.file(name, bytes), Array(SHA256.hash(data: bytes)))
    }

    /// The SHA-256 of the object, streamed (never the whole object in memory), and its size.
    static func sha256(of key: String, _ client: S3Client) async throws -> (sha256: [UInt8], size: Int64) {
        let stream = try await client.getObjectStream(key: key)
        var hash = SHA256()
        var size: Int64 = 0
        for try await chunk in stream.body {
            chunk.withUnsafeReadableBytes { hash.update(bufferPointer: $0) }
            size += Int64(chunk.readableBytes)
        }
        return (Array(hash.finalize()), size)
    }
}

/// A transport that records every request (method and URL) and can fail chosen ones before
/// they are sent, as a dropped connection would.
final class RecordingTransport: S3Transport, @unchecked Sendable {
    struct InjectedFailure: Error, CustomStringConvertible {
        var description: String { "injected: connection reset" }
    }

    let inner: any S3Transport
    private let lock = NSLock()
    private var sent: [String] = []
    private var shouldFail: (String) -> Bool

    /// `shouldFail` sees `METHOD URL` of each request (under a lock, in order).
    init(inner: any S3Transport = HTTPClientTransport(client: RGW.httpClient), shouldFail: @escaping (String) -> Bool = { _ in false }) {
        self.inner = inner
        self.shouldFail = shouldFail
    }

    /// `METHOD URL` of every request, failed ones included.
    var requests: [String] { lock.withLock { sent } }

    /// The part numbers of the UploadPart requests, in order.
    var uploadedPartNumbers: [Int] {
        requests.filter { $0.hasPrefix("PUT ") }.compactMap { line in
            line.split(separator: "?").last?.split(separator: "&").first { $0.hasPrefix("partNumber=") }.flatMap { Int($0.dropFirst("partNumber=".count)) }
        }
    }

    func execute(_ request: HTTPClientRequest, timeout: TimeAmount) async throws -> HTTPClientResponse {
        let line = "\(request.method.rawValue) \(request.url)"
        let fail = lock.withLock { () -> Bool in
            sent.append(line)
            return shouldFail(line)
        }
        if fail { throw InjectedFailure() }
        return try await inner.execute(request, timeout: timeout)
    }
}

/// The sleeps asked for, instead of sleeping.
final class RecordedSleeps: @unchecked Sendable {
    private let lock = NSLock()
    private var durations: [Duration] = []
    var all: [Duration] { lock.withLock { durations } }
    var sleep: @Sendable (Duration) async throws -> Void {
        { [self] duration in lock.withLock { durations.append(duration) } }
    }
}

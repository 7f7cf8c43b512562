public import AsyncHTTPClient
public import NIOCore

/// What sends ``S3Client``'s requests: AsyncHTTPClient in use, a wrapper in tests (one that
/// counts requests, or fails a chosen one, to exercise retries and resumption).
public protocol S3Transport: Sendable {
    func execute(_ request: HTTPClientRequest, timeout: TimeAmount) async throws -> HTTPClientResponse
}

/// ``S3Transport`` over an `HTTPClient` the caller owns (and shuts down).
public struct HTTPClientTransport: S3Transport {
    public let client: HTTPClient

    public init(client: HTTPClient) { self.client = client }

    public func execute(_ request: HTTPClientRequest, timeout: TimeAmount) async throws -> HTTPClientResponse {
        try await client.execute(request, timeout: timeout)
    }

    /// An `HTTPClient` configured for S3: bounded connect and idle-read times, no redirects
    /// (S3 answers a wrong region with a 301 that must be reported, not followed with the
    /// old signature), no decompression (bodies are stored bytes, hashed as sent).
    public static func makeHTTPClient(connectTimeout: TimeAmount = .seconds(10), readTimeout: TimeAmount = .seconds(60)) -> HTTPClient {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow, timeout: .init(connect: connectTimeout, read: readTimeout))
        configuration.decompression = .disabled
        configuration.httpVersion = .http1Only
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }
}

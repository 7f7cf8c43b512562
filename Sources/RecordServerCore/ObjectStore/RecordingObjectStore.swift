import AsyncHTTPClient
import Foundation
import ObjectStorage

/// The object store finished recordings are copied to (config `objectStore`): the S3 client,
/// the HTTP client under it (shut down with the server) and the rules for keys.
///
/// A recording's key is its path below the data directory (`recordings/<agent>/<day>/<session>/
/// recording.mp4`) under the location's prefix: the bucket reads like the data directory, and
/// servers that share a bucket never collide because session ids are unique in the catalog.
final class RecordingObjectStore: Sendable {
    let client: S3Client
    let keepLocalCopy: Bool
    private let http: HTTPClient
    private let dataDirectory: String

    init(configuration: ServerConfiguration.ObjectStore, dataDirectory: String) throws {
        let location = try S3Location(parsing: configuration.url)
        let credentials = try S3Credentials.load(accessKeyFile: configuration.accessKeyFile, secretKeyFile: configuration.secretKeyFile)
        http = HTTPClientTransport.makeHTTPClient()
        client = S3Client(location: location, credentials: credentials, transport: HTTPClientTransport(client: http))
        keepLocalCopy = configuration.keepLocalCopy
        self.dataDirectory = dataDirectory
    }

    /// `s3://bucket/prefix` as logs show it (no credentials).
    var description: String { "s3://\(client.location.bucket)/\(client.location.keyPrefix) at \(client.location.endpoint.url)" }

    /// The key of the file at `path` (below the data directory), or nil for a path outside it.
    func key(forFileAt path: String) -> String? {
        let root = dataDirectory.hasSuffix("/") ? dataDirectory : dataDirectory + "/"
        guard path.hasPrefix(root) else { return nil }
        return String(path.dropFirst(root.count))
    }

    /// `key` (as the catalog stores it, with the location's prefix) without the prefix the client adds.
    func relativeKey(_ key: String) -> String {
        let prefix = client.location.keyPrefix
        return key.hasPrefix(prefix) ? String(key.dropFirst(prefix.count)) : key
    }

    func shutdown() async {
        // Nothing is left to report at shutdown; a failure only means connections were closing already.
        try? await http.shutdown()
    }
}

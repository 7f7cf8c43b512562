import Foundation
import RecordingTLS
import RecordServerCore

/// What every real-server fixture starts from: a fresh CA in a directory, the server's
/// certificate for loopback, a data directory, and a configuration that serves there on
/// ports the kernel picks. The directory's lifetime is the fixture's.
public struct TestServerPKI: Sendable {
    public let directory: String
    public let ca: CertificateAuthority
    public var caPath: String { directory + "/ca.pem" }
    public var dataDirectory: String { directory + "/data" }

    public init(directory: String) throws {
        self.directory = directory
        try FileManager.default.createDirectory(atPath: directory + "/data", withIntermediateDirectories: true)
        ca = try CertificateAuthority.create()
        try ca.certificatePEM.write(toFile: directory + "/ca.pem", atomically: true, encoding: .utf8)
        let server = try ca.issueServerCertificate(hostnames: ["localhost"], ipAddresses: ["127.0.0.1"])
        try server.write(certPath: directory + "/server.pem", keyPath: directory + "/server-key.pem")
    }

    /// record-server on 127.0.0.1 with this CA; the admin API only with a token.
    public func serverConfiguration(adminToken: String? = nil, resumeWindowSeconds: Int) -> ServerConfiguration {
        var config = ServerConfiguration()
        config.ingest = .init(host: "127.0.0.1", port: 0)
        config.admin = adminToken.map { .init(enabled: true, host: "127.0.0.1", port: 0, token: $0) } ?? .init(enabled: false)
        config.dataDirectory = dataDirectory
        config.tls = .init(caCertificate: caPath, certificate: directory + "/server.pem", privateKey: directory + "/server-key.pem")
        config.resumeWindowSeconds = resumeWindowSeconds
        config.shutdownGraceSeconds = 5
        return config
    }
}

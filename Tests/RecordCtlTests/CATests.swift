import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
@testable import RecordServerCore
import RecordingTLS
import Shared
import WireProtocolNIO
import Testing
import TestSupport

/// `recordctl ca` end to end: a CA and certificates made by the CLI are accepted by a real
/// record-server; a revoked agent and an expired certificate are refused.
@Suite("recordctl ca", .serialized)
struct CATests {
    enum HelloOutcome: Equatable { case accepted, refused(ProtocolError.Code), handshakeFailed }

    /// Connects with an agent certificate, sends Hello and reports what the server answered.
    static func hello(port: Int, ca: String, cert: String, key: String, agentID: String) async throws -> HelloOutcome {
        let tls = try TLSConfigurations.client(caPEMPath: ca, certificatePEMPath: cert, privateKeyPEMPath: key, serverHostname: "localhost")
        let context = try NIOSSLContext(configuration: tls)
        let group = MultiThreadedEventLoopGroup.singleton
        let promise = group.next().makePromise(of: Message?.self)
        final class FirstMessage: ChannelInboundHandler, @unchecked Sendable {
            typealias InboundIn = Message
            let promise: EventLoopPromise<Message?>
            init(_ promise: EventLoopPromise<Message?>) { self.promise = promise }
            func channelRead(context: ChannelHandlerContext, data: NIOAny) { promise.succeed(unwrapInboundIn(data)) }
            func channelInactive(context: ChannelHandlerContext) { promise.succeed(nil) }
            func errorCaught(context: ChannelHandlerContext, error: any Error) {
                promise.succeed(nil)
                context.close(promise: nil)
            }
        }
        let channel = try await ClientBootstrap(group: group).channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                let sync = channel.pipeline.syncOperations
                try sync.addHandler(try NIOSSLClientHandler(context: context, serverHostname: "localhost"))
                try sync.addHandler(MessageCodecHandler())
                try sync.addHandler(FirstMessage(promise))
            }
        }.connect(host: "127.0.0.1", port: port).get()
        channel.writeAndFlush(Message.hello(Hello(agentID: try Identifier(validating: agentID), softwareVersion: "ca-test")), promise: nil)
        let first = try await promise.futureResult.get()
        try? await channel.close()
        switch first {
        case .helloReply?: return .accepted
        case .error(let report)?: return .refused(report.code)
        default: return .handshakeFailed
        }
    }

    @Test("certificates from `recordctl ca` are accepted; revoked (also while running) and expired agents are refused")
    func caLifecycle() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ca-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let ca = dir + "/ca"
        for arguments in [["ca", "init", "--ca-dir", ca],
                          ["ca", "issue", "server", "--ca-dir", ca, "--host", "localhost", "--ip", "127.0.0.1", "--out", dir + "/server"],
                          ["ca", "issue", "agent", "cam-ok", "--ca-dir", ca, "--out", dir + "/cam-ok"],
                          ["ca", "issue", "agent", "cam-revoked", "--ca-dir", ca, "--out", dir + "/cam-revoked"],
                          ["ca", "revoke", "--ca-dir", ca, dir + "/cam-revoked.pem"]] {
            let result = try recordctl(arguments)
            #expect(result.status == 0, "recordctl \(arguments.joined(separator: " ")): \(result.stderr)")
        }
        // An expired certificate from the same CA (the CLI refuses --days 0): valid for a day, two days ago.
        let expired = try CertificateAuthority.load(from: ca).issueAgentCertificate(
            agentID: "cam-expired", validity: 86_400, notBefore: Date().addingTimeInterval(-2 * 86_400))
        try expired.write(certPath: dir + "/cam-expired.pem", keyPath: dir + "/cam-expired-key.pem")
        // Issuing over an existing certificate is refused without --force; --days 0 is refused.
        let again = try recordctl(["ca", "issue", "agent", "cam-ok", "--ca-dir", ca, "--out", dir + "/cam-ok"])
        #expect(again.status == 1 && again.stderr.contains("--force"), "\(again.output)")
        let zero = try recordctl(["ca", "issue", "agent", "cam-zero", "--ca-dir", ca, "--days", "0", "--out", dir + "/cam-zero"])
        #expect(zero.status == 2 && zero.stderr.contains("--days"), "\(zero.output)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/cam-zero.pem"))
        // Private keys are never readable by others.
        for key in [ca + "/ca-key.pem", dir + "/server-key.pem", dir + "/cam-ok-key.pem"] {
            let mode = try FileManager.default.attributesOfItem(atPath: key)[.posixPermissions] as? Int
            #expect(mode == 0o600, "\(key) has mode \(String(mode ?? 0, radix: 8))")
        }

        var config = ServerConfiguration()
        config.ingest = .init(host: "127.0.0.1", port: 0)
        config.admin.enabled = false
        config.dataDirectory = dir + "/data"
        config.tls = .init(caCertificate: ca + "/ca.pem", certificate: dir + "/server.pem", privateKey: dir + "/server-key.pem",
                           revocationList: ca + "/" + RevocationList.fileName)
        var logger = Logger(label: "ca-test")
        logger.logLevel = .critical
        let running = try await RecordServer(configuration: config, logger: logger).start()
        func hello(_ id: String) async throws -> HelloOutcome {
            try await Self.hello(port: running.ingestPort, ca: ca + "/ca.pem", cert: dir + "/\(id).pem", key: dir + "/\(id)-key.pem", agentID: id)
        }
        #expect(try await hello("cam-ok") == .accepted)
        #expect(try await hello("cam-revoked") == .refused(.authenticationFailed))
        #expect(try await hello("cam-expired") == .handshakeFailed)
        // A revocation while the server runs takes effect at the next connection: the server
        // re-reads the file when it changes, no restart.
        let revoke = try recordctl(["ca", "revoke", "--ca-dir", ca, dir + "/cam-ok.pem"])
        #expect(revoke.status == 0, "\(revoke.stderr)")
        #expect(try await hello("cam-ok") == .refused(.authenticationFailed))
        // A broken file does not lift revocations: the previous list stays in force.
        try Data("{ not json".utf8).write(to: URL(fileURLWithPath: ca + "/" + RevocationList.fileName))
        #expect(try await hello("cam-ok") == .refused(.authenticationFailed))
        #expect(try await hello("cam-revoked") == .refused(.authenticationFailed))
        await running.stop()
    }
}

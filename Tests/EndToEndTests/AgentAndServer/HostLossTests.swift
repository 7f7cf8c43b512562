import AsyncHTTPClient
import Foundation
import Logging
import NIOPosix
import ObjectStorage
@testable import RecordServerCore
import RecordingTLS
import Shared
import Testing
import TestSupport
@testable import CaptureAgentCore

/// Issue 18's host loss: three real record-server processes, each on a host of its own (a
/// network namespace, ``NetworkHosts``), share a PostgreSQL catalog and a Ceph RGW bucket; two
/// real capture agents record, each configured with all three servers. Mid-session the host
/// holding one agent's session is lost: it drops off the network (its peers hear nothing more,
/// as in a power cut), its server is killed with SIGKILL and its data directory deleted. The
/// agent notices the silence, fails over; another server takes the session over from its live
/// copy in the bucket once the lease ran out; the other agent's session is untouched. Both
/// recordings, read back from the bucket, hold every frame exactly once, and the catalog says
/// what the objects hold.
@Suite("Host loss in a fleet of record-servers", .serialized,
       .enabled(if: ObjectStoreFixture.enabled && NetworkHosts.canCreate,
                "OBJECT_STORE_TESTS=1 (the test command sets it), root and iproute2 for the hosts' network namespaces"))
struct HostLossTests {
    static let seconds = 24.0
    static let fps = 10
    static let sources = ["front=test:320x240@\(fps)", "back=test:320x240@\(fps)", "tone=test:audio"]
    /// For the whole test process, as AsyncHTTPClient wants (a client must be shut down before it goes).
    static let http = HTTPClientTransport.makeHTTPClient(readTimeout: .seconds(60))

    @Test(.timeLimit(.minutes(8)))
    func aServerKilledWithItsDiskDeletedMidSessionLosesNoFrame() async throws {
        // Three servers and two encoding agents load both cores: it takes its turn with the
        // other heavy tests (HeavyTests) so that none of them starves the others' servers.
        try await HeavyTests.exclusively { try await loseAHost() }
    }

    private func loseAHost() async throws {
        let fixture = try EndToEndFixture()
        let hosts = try NetworkHosts(count: 3)
        defer { hosts.remove() }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        // The servers reach PostgreSQL through its Unix socket (a namespace does not hide the
        // file system) and the loopback-only RGW through a proxy on the bridge.
        let store = try await ObjectStoreFixture.shared()
        let rgwPort = try #require(URL(string: store.endpoint)?.port)
        let rgw = try await FaultInjectingProxy(group: group, targetPort: rgwPort, host: hosts.bridgeAddress)
        let bucket = ObjectStoreFixture.uniqueBucket("host-loss")
        let postgres = try await TestPostgres.shared()
        let catalogURL = postgres.socketURL(database: TestPostgres.database(of: try await postgres.createDatabase()))
        let objectStore = ServerConfiguration.ObjectStore(url: "s3://\(bucket)/fleet/?endpoint=http://\(hosts.bridgeAddress):\(rgw.port)",
                                                          accessKeyFile: store.accessKeyFile, secretKeyFile: store.secretKeyFile)
        var servers: [ServerProcess] = []
        for (index, name) in ["rec-1", "rec-2", "rec-3"].enumerated() {
            let server = try ServerProcess(fixture: fixture.server, name: name)
            server.launcher = hosts.launcher(index)
            server.address = hosts.address(index)
            try server.reconfigure {
                $0.dataDirectory = fixture.directory.path + "/" + name
                $0.catalog = catalogURL
                $0.objectStore = objectStore
                $0.ingest = .init(host: hosts.address(index), port: server.port)
            }
            try server.start()
            servers.append(server)
        }
        defer { for server in servers { server.kill9() } }
        for server in servers { try await server.waitUntilListening() }
        let serverIDs = try await eventually("the servers' ids") { () -> [String]? in
            // Not written until a server has started; asked again until all three are.
            let ids = servers.compactMap { try? ServerIdentity.load(dataDirectory: $0.configuration.dataDirectory) }
            return ids.count == servers.count ? ids : nil
        }
        let catalog = try PostgresCatalog(address: PostgresCatalogAddress(parsing: catalogURL), logger: Logger(label: "host-loss"))

        // Agent a starts on rec-1, agent b on rec-2; each knows all three (the servers' certificate
        // names localhost, so that is the name each address is checked against).
        var runtimes: [AgentRuntime] = []
        for (agent, first) in [("agent-a", 0), ("agent-b", 1)] {
            var settings = try fixture.server.agentSettings(agentID: agent, port: servers[first].port, sources: Self.sources, record: true,
                                                            sessionID: try Identifier(validating: "loss-\(agent)"), duration: Self.seconds)
            settings.servers = (0..<3).map { i in
                ServerAddress(host: hosts.address((first + i) % 3), port: servers[(first + i) % 3].port, tlsHostname: "localhost")
            }
            runtimes.append(try AgentRuntime(settings: settings, logger: EndToEndFixture.logger, group: group))
        }
        let running = Task {
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                for runtime in runtimes { tasks.addTask { try await runtime.run() } }
                try await tasks.waitForAll()
            }
        }

        // A third of the way in, rec-1's host is lost: its network, its process and its disk.
        let onFirst = try await eventually("agent a's session on rec-1") { () -> SessionRecord? in
            try catalog.session(id: "loss-agent-a").flatMap { $0.serverID == serverIDs[0] ? $0 : nil }
        }
        try await Task.sleep(for: .seconds(Self.seconds / 3))
        let lostAt = ContinuousClock.now
        try hosts.disconnect(0)
        servers[0].kill9()
        try FileManager.default.removeItem(atPath: servers[0].configuration.dataDirectory)
        let taken = try await eventually("another server to take agent a's session over", seconds: 90) { () -> SessionRecord? in
            try catalog.session(id: "loss-agent-a").flatMap { $0.serverID != serverIDs[0] ? $0 : nil }
        }
        let failover = ContinuousClock.now - lostAt
        #expect(taken.directory != onFirst.directory)
        print("host-loss: session loss-agent-a taken over by \(taken.serverID ?? "?") \(failover) after rec-1's host was lost")

        try await running.value

        // Every file of both sessions is uploaded as a finished object; read them from the bucket.
        let s3 = S3Client(location: try S3Location(parsing: "s3://\(bucket)/?endpoint=\(store.endpoint)"),
                          credentials: try S3Credentials.load(accessKeyFile: store.accessKeyFile, secretKeyFile: store.secretKeyFile),
                          transport: HTTPClientTransport(client: Self.http))
        let scratch = try TemporaryDirectory(prefix: "host-loss-objects")
        for session in ["loss-agent-a", "loss-agent-b"] {
            let row = try #require(try catalog.session(id: session))
            #expect(row.status == .completed, "\(session): \(row.status) \(row.error ?? "")")
            let files = try catalog.recordings(sessionID: session)
            #expect(files.count == 1, "\(session): \(files.map(\.path))")
            for var file in files {
                let upload: UploadRecord
                do { upload = try await eventually("\(file.id) to be uploaded", seconds: 60) { try catalog.upload(recordingID: file.id) } } catch {
                    // What the servers said about it, for the failure report.
                    for server in servers.dropFirst() {
                        print(server.log.split(separator: "\n").filter { $0.contains(session) }.suffix(15).joined(separator: "\n"))
                    }
                    throw error
                }
                file.path = try scratch.file(file.id + ".mp4", try await s3.getObject(key: upload.objectKey, maximumBytes: 1 << 30))
                let tracks = try catalog.tracks(sessionID: session)
                try Oracle.expectCatalogMatchesFile(file, tracks: tracks)
                let drops = Dictionary(tracks.map { ($0.label, Int($0.dropped)) }, uniquingKeysWith: +)
                let expected = Int(Self.seconds) * Self.fps
                let frames = checkContiguousFrames(try DecodedRecording(path: file.path), expected: (expected - 2 * Self.fps)...(expected + Self.fps),
                                                   drops: drops, context: "\(session) from the bucket")
                let audio = try Oracle.streams(file.path).first { $0.handler == "tone" }?.packets ?? 0
                print("host-loss: \(session) video frames per track \(frames) (expected about \(expected)), audio packets \(audio), "
                      + "catalog samples \(tracks.map { "\($0.label)=\($0.samples)" }), reported drops \(drops)")
            }
        }
        #expect(try catalog.session(id: "loss-agent-b")?.serverID == serverIDs[1], "agent b's session stayed on rec-2")
        for server in servers.dropFirst() { server.terminate() }
        await rgw.close()
        try await group.shutdownGracefully()
    }
}

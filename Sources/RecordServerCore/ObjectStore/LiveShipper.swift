import Foundation
import Logging
import NIOConcurrencyHelpers
import ObjectStorage
import ServiceLifecycle
import Shared

/// Ships every recording session of this server to object storage while it records, so that
/// losing this host loses nothing an agent was told is safe: each durable fragment is copied
/// within about ``interval`` (``ShippingLedger``, ``LiveFragmentKeys``), and the agents that
/// negotiated `remoteAcks` get a `RemoteAck` for what the copy covers (protocol.md §6.13a).
/// Another server that takes a session over rebuilds its files from the copy (``restore``).
///
/// A store that does not answer stops the `RemoteAck`s, not the recording: the local `Ack`s
/// go on, each session's queue of unshipped fragments grows (bounded by what its agent may
/// hold, which stops sending when its own buffer is full), and shipping resumes where it
/// stopped.
final class LiveShipper: Service, Sendable {
    static let interval: Duration = .seconds(1)

    let store: RecordingObjectStore
    private let logger: Logger
    private let metrics: ServerMetrics?
    private let clock: any ServerClock
    /// The sessions being shipped: every session this server records while it records, and
    /// after it finished until its last fragment is shipped.
    private let followed = NIOLockedValueBox<[ObjectIdentifier: RecordingSession]>([:])
    /// Sends a message to an agent on a connection (the registry checks that the connection
    /// is still the agent's and negotiated `remoteAcks`).
    private let deliver = NIOLockedValueBox<(@Sendable (String, UInt64, Message) async -> Void)?>(nil)
    private let wake = NIOLockedValueBox<CheckedContinuation<Void, Never>?>(nil)

    init(store: RecordingObjectStore, clock: any ServerClock, metrics: ServerMetrics?, logger: Logger) {
        self.store = store
        self.clock = clock
        self.metrics = metrics
        self.logger = logger
    }

    func setDelivery(_ send: @escaping @Sendable (String, UInt64, Message) async -> Void) {
        deliver.withLockedValue { $0 = send }
    }

    /// Whether session `id` still has fragments to ship (or may get more: it records).
    func isShipping(_ id: String) -> Bool {
        followed.withLockedValue { $0.values.contains { $0.id.value == id } }
    }

    /// Starts shipping `session` (a new one, or one resumed after a restart or a takeover).
    func follow(_ session: RecordingSession) {
        followed.withLockedValue { $0[ObjectIdentifier(session)] = session }
    }

    func run() async throws {
        await withGracefulShutdownHandler {
            while !Task.isCancelled && !Task.isShuttingDownGracefully {
                await pass()
                // A cancelled sleep ends the loop at its condition; there is nothing to report.
                try? await clock.sleep(for: Self.interval)
            }
        } onGracefulShutdown: { [logger] in
            logger.info("object store: live shipping stops; suspended sessions ship the rest after the restart")
        }
    }

    /// Ships what every followed session has waiting; drops the sessions that finished and
    /// have nothing left to ship.
    func pass() async {
        for session in followed.withLockedValue({ Array($0.values) }) {
            do {
                try await ship(session)
            } catch {
                logger.warning("object store: cannot ship a recording session; trying again in \(Self.interval)", metadata: [
                    "session": "\(session.id)", "error": "\(error)"])
                metrics?.uploadFailed()
                continue
            }
            if await session.isDoneShipping { followed.withLockedValue { $0[ObjectIdentifier(session)] = nil } }
        }
    }

    private func ship(_ session: RecordingSession) async throws {
        let id = session.id.value
        if await !session.sidecarsShipped {
            for name in SessionSidecar.fileNames {
                guard let data = FileManager.default.contents(atPath: session.directory + "/" + name) else { continue }
                _ = try await store.client.putObject(key: LiveFragmentKeys.sidecar(id, file: name), bytes: Array(data))
            }
            await session.markSidecarsShipped()
        }
        let lookUp = await session.filesToLookUp
        if !lookUp.isEmpty {
            let chains = try await chains(of: id)
            for file in lookUp {
                let end = chains[file].flatMap { $0.last.map { $0.offset + $0.size } } ?? 0
                await send(await session.knownShipped(file: file, end: end))
            }
        }
        while let chunk = await session.nextChunk() {
            let bytes: [UInt8]
            do { bytes = try Self.read(chunk) } catch where !FileManager.default.fileExists(atPath: chunk.path) {
                // Deleted (through the admin API, or by hand): there is nothing left to copy,
                // and trying every second would never end. What waits for the copy is answered.
                logger.warning("object store: a recording file went away before it was shipped; live shipping of its session stops",
                               metadata: ["session": "\(id)", "file": "\(chunk.path)"])
                await session.abandonShipping()
                return
            }
            let epoch = await session.shippingEpochValue
            _ = try await store.client.putObject(key: LiveFragmentKeys.chunk(id, epoch: epoch, file: chunk.file, offset: chunk.from), bytes: bytes)
            metrics?.liveChunkShipped(bytes: bytes.count, lag: .now - chunk.oldest)
            await send(await session.shipped(chunk))
        }
    }

    private func send(_ deliveries: [RecordingSession.RemoteAckDelivery]) async {
        guard let deliver = deliver.withLockedValue({ $0 }) else { return }
        for d in deliveries { await deliver(d.agentID, d.connection, .remoteAck(Ack(sessionID: d.wireID, sequence: d.sequence))) }
    }

    /// `chunk`'s bytes from its file. The file's first bytes change when it is finalized in
    /// place (its head becomes the `mdat` header); the copy keeps them as they were while it
    /// recorded, so that the copy is the fragmented file a resume continues.
    static func read(_ chunk: ShippingLedger.Chunk) throws -> [UInt8] {
        let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: chunk.path))
        defer { try? handle.close() } // read-only: closing cannot lose anything
        try handle.seek(toOffset: chunk.from)
        var bytes = Array(try handle.read(upToCount: Int(chunk.to - chunk.from)) ?? Data())
        guard bytes.count == Int(chunk.to - chunk.from) else {
            throw StorageError.damagedFile(path: chunk.path, reason: "holds \(chunk.from + UInt64(bytes.count)) bytes, fewer than its durable \(chunk.to)")
        }
        let head = MP4Muxer.fragmentedFileHead
        if chunk.from < UInt64(head.count) {
            let start = Int(chunk.from)
            let count = min(head.count - start, bytes.count)
            bytes.replaceSubrange(0..<count, with: head[start..<(start + count)])
        }
        return bytes
    }

    /// Each file's chain of chunks in the bucket for session `id`.
    private func chains(of id: String) async throws -> [String: [LiveFragmentKeys.Listed]] {
        let listed = try await store.client.listObjects(prefix: LiveFragmentKeys.sessionPrefix(id))
        return LiveFragmentKeys.chains(listed.compactMap { LiveFragmentKeys.parse($0.key, size: $0.size, sessionID: id) })
    }

    /// Rebuilds session `id`'s directory from its copy in the bucket, into `directory` (this
    /// server's): its sidecar files, and each file as the chain of its chunks. Returns each
    /// file's size. Fails when the bucket holds no `SessionOpen` for it.
    func restore(sessionID id: String, into directory: String) async throws -> [String: UInt64] {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for name in SessionSidecar.fileNames {
            let key = LiveFragmentKeys.sidecar(id, file: name)
            do {
                let bytes = try await store.client.getObject(key: key, maximumBytes: 16 << 20)
                try Self.writeDurably(bytes, to: directory + "/" + name)
            } catch let error as S3Error where error.status == 404 {
                guard name != SessionSidecar.openFileName else {
                    throw StorageError.damagedFile(path: key, reason: "the bucket holds no SessionOpen for session \(id)")
                }
            }
        }
        var sizes: [String: UInt64] = [:]
        for (file, chain) in try await chains(of: id) {
            let path = directory + "/" + file
            FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600])
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            for chunk in chain {
                let bytes = try await store.client.getObject(key: chunk.key, maximumBytes: Int(chunk.size) + 1)
                guard bytes.count == Int(chunk.size) else {
                    throw StorageError.damagedFile(path: chunk.key, reason: "read \(bytes.count) of its \(chunk.size) bytes")
                }
                try handle.write(contentsOf: bytes)
            }
            try handle.synchronize()
            try handle.close()
            sizes[file] = chain.last.map { $0.offset + $0.size } ?? 0
            logger.notice("object store: rebuilt a recording file of a session taken over", metadata: [
                "session": "\(id)", "file": "\(path)", "bytes": "\(sizes[file] ?? 0)", "chunks": "\(chain.count)"])
        }
        return sizes
    }

    private static func writeDurably(_ bytes: [UInt8], to path: String) throws {
        FileManager.default.createFile(atPath: path, contents: Data(bytes), attributes: [.posixPermissions: 0o600])
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.synchronize()
        try handle.close()
    }
}

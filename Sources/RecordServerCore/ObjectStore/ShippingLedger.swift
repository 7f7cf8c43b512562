import Shared

/// What of one recording session is in object storage, and what to ship next (sans-I/O: the
/// ``LiveShipper`` does the reading and the uploading).
///
/// The session reports each fragment once it is durable on this host (its file, where the
/// fragment ends in it, and the ack points it brings). Shipping copies a file's bytes from
/// where the last copy ended up to the end of a reported fragment as one object (a
/// *chunk*, ``LiveFragmentKeys``); once stored, everything that fragment's ack points cover
/// is durable beyond this host: the session's *remote* points, which its agents hear as
/// `RemoteAck`s (protocol.md §6.13a). Chunks go out in the order the fragments became
/// durable, because a fragment's ack points count fragments of earlier files too.
struct ShippingLedger: Sendable {
    /// A fragment durable on this host, not yet shipped.
    struct Durable: Sendable, Equatable {
        var file: String
        var path: String
        var fileEnd: UInt64
        var durable: DurablePoints
        /// When it became durable here (what the copy's lag is measured from).
        var at: ContinuousClock.Instant
    }

    /// One object to ship: `file`'s bytes `from..<to`; once stored the remote points are `durable`.
    struct Chunk: Sendable, Equatable {
        var file: String
        var path: String
        var from: UInt64
        var to: UInt64
        var durable: DurablePoints
        /// How many queued reports it covers.
        var reports: Int
        /// When its oldest fragment became durable here.
        var oldest: ContinuousClock.Instant
    }

    /// The largest chunk: fragments are about a second of media, so one chunk is a few
    /// fragments unless the store was away for a while.
    static let maximumChunkBytes: UInt64 = 64 << 20

    private(set) var queue: [Durable] = []
    /// Where each file's copy in the bucket ends (nil: not looked up yet, after a resume).
    private(set) var shippedEnd: [String: UInt64] = [:]
    /// Everything these points cover is in object storage.
    private(set) var remote = DurablePoints()
    /// The session's sidecar files (its `SessionOpen`, settings, members) are in the bucket:
    /// a server that takes the session over needs them before any fragment.
    var sidecarsShipped = false
    /// How many times the session changed servers: names its chunks (``LiveFragmentKeys``).
    let epoch: Int

    init(epoch: Int) { self.epoch = epoch }

    var isCaughtUp: Bool { queue.isEmpty }

    mutating func fragmentDurable(file: String, path: String, fileEnd: UInt64, durable: DurablePoints, at: ContinuousClock.Instant = .now) {
        queue.append(Durable(file: file, path: path, fileEnd: fileEnd, durable: durable, at: at))
    }

    /// After a resume: the bucket's copy of `file` ends at `end` (found by listing it).
    mutating func knownShipped(file: String, end: UInt64) {
        shippedEnd[file] = max(shippedEnd[file] ?? 0, end)
        settleShipped()
    }

    /// The files whose copy in the bucket is not known yet: the shipper lists them first.
    var filesToLookUp: [String] { Array(Set(queue.map(\.file)).filter { shippedEnd[$0] == nil }).sorted() }

    /// The oldest unshipped bytes: from where the first queued report's file was shipped to,
    /// through as many of that file's following reports as fit one chunk.
    func nextChunk() -> Chunk? {
        guard let first = queue.first, let start = shippedEnd[first.file] else { return nil }
        var last = 0
        for (i, report) in queue.enumerated().dropFirst() {
            guard report.file == first.file, report.fileEnd - start <= Self.maximumChunkBytes else { break }
            last = i
        }
        let end = queue[last]
        return Chunk(file: first.file, path: first.path, from: start, to: end.fileEnd, durable: end.durable, reports: last + 1, oldest: first.at)
    }

    /// `chunk` is stored: its reports leave the queue and the remote points move up.
    mutating func shipped(_ chunk: Chunk) {
        shippedEnd[chunk.file] = max(shippedEnd[chunk.file] ?? 0, chunk.to)
        settleShipped()
    }

    /// Drops the queued reports the bucket already covers, raising the remote points.
    private mutating func settleShipped() {
        while let first = queue.first, let end = shippedEnd[first.file], first.fileEnd <= end {
            remote.formMaximum(first.durable)
            queue.removeFirst()
        }
    }
}

/// Where a session's live copy lives in the bucket, below the location's prefix:
///
///     live/<session>/session/<sidecar file>              its SessionOpen, settings, members
///     live/<session>/<epoch>/<file>/<offset>             file bytes from offset (16 digits)
///
/// A chunk is named by where it starts; its size says where it ends. The copy of a file is
/// the chain of chunks from offset 0, each starting where the previous ended; where two start
/// at the same offset (a server that lost the session kept shipping after another took it
/// over), the higher epoch's wins: it is the one its owner continued from.
enum LiveFragmentKeys {
    static func sessionPrefix(_ sessionID: String) -> String { "live/\(sessionID)/" }

    static func sidecar(_ sessionID: String, file: String) -> String { sessionPrefix(sessionID) + "session/" + file }

    static func chunk(_ sessionID: String, epoch: Int, file: String, offset: UInt64) -> String {
        sessionPrefix(sessionID) + padded(epoch, 4) + "/" + file + "/" + padded(offset, 16)
    }

    /// One listed chunk.
    struct Listed: Sendable, Equatable {
        var key: String
        var epoch: Int
        var file: String
        var offset: UInt64
        var size: UInt64
    }

    /// The chunk a key (relative to the location's prefix) names; nil for sidecars and
    /// anything else.
    static func parse(_ key: String, size: Int64, sessionID: String) -> Listed? {
        let prefix = sessionPrefix(sessionID)
        guard key.hasPrefix(prefix), size > 0 else { return nil }
        let parts = key.dropFirst(prefix.count).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, let epoch = Int(parts[0]), let offset = UInt64(parts[2]), !parts[1].isEmpty,
              !parts[1].contains("..") else { return nil }
        return Listed(key: key, epoch: epoch, file: String(parts[1]), offset: offset, size: UInt64(size))
    }

    /// Each file's chain of chunks from offset 0 (see the type's comment), by file name.
    static func chains(_ chunks: [Listed]) -> [String: [Listed]] {
        var result: [String: [Listed]] = [:]
        for (file, ofFile) in Dictionary(grouping: chunks, by: \.file) {
            let byStart = Dictionary(grouping: ofFile, by: \.offset)
            var chain: [Listed] = []
            var position: UInt64 = 0
            while let next = byStart[position]?.max(by: { $0.epoch < $1.epoch }) {
                chain.append(next)
                position += next.size
            }
            if !chain.isEmpty { result[file] = chain }
        }
        return result
    }

    private static func padded(_ value: some BinaryInteger, _ width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}

import Synchronization

/// What one peer may make the server hold or wait for, before and after it authenticates
/// (protocol.md §7.4 and §9). A hostile or broken peer hits one of these bounds and is
/// closed with a specific error; no other connection or session notices.
struct IngestBudgets: Sendable, Equatable {
    /// Largest payload of any frame before the peer's Hello is accepted. A Hello with every
    /// field at its limit is under 40 KiB.
    static let maxHelloPayload = 64 * 1024

    /// The first frame (the Hello) must be complete this long after the connection was
    /// accepted, TLS handshake included.
    var helloDeadline: Duration = .seconds(10)
    /// Some frame must complete at least this often (protocol.md §7.4). Counted from the
    /// last *complete* frame: a byte now and then does not keep a connection alive.
    var idleTimeout: Duration = .seconds(30)
    /// A frame that has begun must complete within `frameGrace` + length / `minFrameBytesPerSecond`.
    var frameGrace: Duration = .seconds(10)
    var minFrameBytesPerSecond = 16_384
    /// Bytes of partly received frames over all authenticated connections.
    var partialFrameBytes = 256 << 20
    /// Bytes of partly received frames over all connections that have not authenticated yet.
    var preAuthenticationBytes = 4 << 20

    init() {}
}

/// A byte budget shared by many connections: each charges what it holds and releases it
/// when the bytes are consumed or the connection ends. Lock-free; charged on event loops.
final class SharedByteBudget: Sendable {
    let limit: Int
    let name: String
    private let used = Atomic<Int>(0)

    init(name: String, limit: Int) {
        self.name = name
        self.limit = limit
    }

    /// Bytes charged now, over all holders.
    var inUse: Int { used.load(ordering: .relaxed) }

    /// Charges `bytes` if the budget has room for them; false (nothing charged) otherwise.
    func charge(_ bytes: Int) -> Bool {
        guard bytes > 0 else { return true }
        var current = used.load(ordering: .relaxed)
        while true {
            guard current + bytes <= limit else { return false }
            let (exchanged, original) = used.compareExchange(expected: current, desired: current + bytes, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
    }

    func release(_ bytes: Int) {
        guard bytes > 0 else { return }
        used.subtract(bytes, ordering: .relaxed)
    }
}

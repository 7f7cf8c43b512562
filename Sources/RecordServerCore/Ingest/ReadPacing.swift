/// When a streaming connection's next read happens: the sans-I/O rule behind
/// `ReadBatchingHandler`, fed the size and end time of each read cycle and, when NIO asks for
/// the next read, what the kernel says about the socket.
///
/// A wait lets a trickling connection's samples collect in the kernel so that one read takes
/// many of them. The same wait throttles a connection whose sender has more to give than the
/// socket holds: once the receive window is full the sender stops, and the connection moves one
/// socket-full per wait (issue 14, finding 7: a ~108 KiB window read once per 200 ms is 550 KB/s,
/// less than one live 2×720p session needs). So a wait is only taken when it cannot fill the
/// socket:
///
/// 1. **Bytes already queued** in the kernel when NIO asks to read: read at once. Waiting for
///    more only holds back what is there.
/// 2. **The last cycle brought half of what the socket holds** (`Socket.capacity`): read at
///    once. The window, not the sender, decided that cycle's size, and the sender may be
///    stalled right now.
/// 3. **Otherwise wait only as long as the last cycle's arrival rate needs to fill a quarter
///    of the socket**, at most `maxDelay`; a wait under `maxDelay / 16` is not worth a timer.
///
/// A live session (~730 KB/s) with a socket of a few hundred KiB or more waits the full
/// `maxDelay`, as before. A backlog that a wait has throttled shows a cycle of at least a
/// socket-full (rule 2) or a rate that halves the next wait at least (rule 3), so the waits
/// vanish within a few cycles and stay gone while the backlog lasts: reading at once, cycles
/// follow each other faster than any wait the rate allows. When the backlog is gone the rate
/// falls to the live rate and the waits come back. Nothing depends on the round-trip time (on a
/// long path the refilled window arrives one RTT after a read; rule 1 alone would miss it).
struct ReadPacing {
    /// What the kernel reports for the socket (Linux `SO_MEMINFO`), both counted as the kernel
    /// counts memory (payload plus per-packet overhead).
    struct Socket: Equatable {
        /// `SK_MEMINFO_RMEM_ALLOC`: received bytes not yet read.
        var queued: Int
        /// `SK_MEMINFO_RCVBUF`: the most the kernel holds before the window closes.
        var capacity: Int
    }

    enum Decision: Equatable {
        case readNow
        case wait(nanoseconds: Int64)
    }

    /// The longest wait (`readCoalescingMillis`), nanoseconds; 0 disables waiting.
    let maxDelay: Int64
    /// The socket size assumed when the kernel cannot be asked (not Linux, not a socket):
    /// 256 KiB makes rule 2 the former fixed rule (a cycle of 128 KiB or more is busy).
    let assumedCapacity: Int

    private var streaming = false
    private var cycleBytes = 0
    private var lastCycleBytes = 0
    /// The arrival rate is measured over periods of at least `maxDelay / 4` (several cycles
    /// when reads are immediate), so that one small or empty cycle (a TLS record split across
    /// reads) does not pass for a slow sender.
    private var periodStart: Int64?
    private var periodBytes = 0
    /// Bytes per second over the last completed period; nil until one completed.
    private var arrivalRate: Double?

    init(maxDelay: Int64, assumedCapacity: Int = 256 << 10) {
        self.maxDelay = maxDelay
        self.assumedCapacity = assumedCapacity
    }

    /// The connection streams a session: from now on, waits may be taken.
    mutating func start() { streaming = true }

    /// Bytes one read of the current cycle brought.
    mutating func received(_ bytes: Int) { cycleBytes += bytes }

    /// The read cycle ended at `now` (monotonic nanoseconds).
    mutating func cycleCompleted(at now: Int64) {
        lastCycleBytes = cycleBytes
        cycleBytes = 0
        guard let start = periodStart else {
            periodStart = now
            return
        }
        periodBytes += lastCycleBytes
        if now - start >= max(maxDelay / 4, 1) {
            arrivalRate = Double(periodBytes) * 1e9 / Double(now - start)
            periodStart = now
            periodBytes = 0
        }
    }

    /// NIO asks for the next read; `socket` is nil when the kernel cannot be asked.
    func nextRead(socket: Socket?) -> Decision {
        guard streaming, maxDelay > 0 else { return .readNow }
        let capacity = socket?.capacity ?? assumedCapacity
        if let socket, socket.queued > 0 { return .readNow }
        if lastCycleBytes >= capacity / 2 { return .readNow }
        guard let rate = arrivalRate, rate > 0 else { return .wait(nanoseconds: maxDelay) }
        let fill = Double(capacity / 4) / rate * 1e9
        if fill >= Double(maxDelay) { return .wait(nanoseconds: maxDelay) }
        if fill < Double(maxDelay / 16) { return .readNow }
        return .wait(nanoseconds: Int64(fill))
    }
}

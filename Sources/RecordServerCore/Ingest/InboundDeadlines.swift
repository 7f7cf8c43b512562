import NIOCore

/// When a peer must have sent what (protocol.md §7.4, §9). Sans-I/O: the handler reports
/// what the parser holds after each read and asks for the next deadline; time comes in as
/// an argument, so tests drive it with made-up instants.
///
/// - The first frame (the Hello) completes within `helloDeadline` of the connection.
/// - A frame, once its first byte has arrived, completes within
///   `frameGrace` + payload length / `minFrameBytesPerSecond`: a slow but honest link gets
///   minutes for a large keyframe, a peer dribbling a byte at a time does not.
/// - Some frame completes within `idleTimeout` of the previous one. Only whole frames count,
///   so single bytes cannot keep a connection open.
struct InboundDeadlines {
    enum Expiry: Equatable {
        case hello, frame, idle
    }

    let budgets: IngestBudgets
    private var lastCompleteFrame: NIODeadline
    private var framesSeen = 0
    /// When the frame now being received began, and its payload length once known.
    private var partial: (started: NIODeadline, length: Int?)?

    init(budgets: IngestBudgets, connectedAt: NIODeadline) {
        self.budgets = budgets
        lastCompleteFrame = connectedAt
    }

    /// After a read: how many frames the parser has completed in all, and the frame it holds
    /// in part, if any (`nil` length while its header is incomplete).
    mutating func observe(now: NIODeadline, framesCompleted: Int, partialFrame: (held: Bool, length: Int?)) {
        if framesCompleted > framesSeen {
            framesSeen = framesCompleted
            lastCompleteFrame = now
            partial = nil
        }
        if partialFrame.held {
            if partial == nil { partial = (now, partialFrame.length) } else { partial?.length = partialFrame.length }
        } else {
            partial = nil
        }
    }

    /// The server did not read for `interval` (backpressure, or waiting to authenticate the
    /// peer): every deadline moves back by it, since the peer could not send meanwhile.
    mutating func shift(by interval: TimeAmount) {
        guard interval > .zero else { return }
        lastCompleteFrame = lastCompleteFrame + interval
        if let started = partial?.started { partial?.started = started + interval }
    }

    /// The earliest instant by which something must have happened, and what.
    func nextDeadline() -> (at: NIODeadline, expiry: Expiry) {
        if framesSeen == 0 {
            return (lastCompleteFrame + .nanoseconds(Int64(budgets.helloDeadline.nanoseconds)), .hello)
        }
        let idle = (lastCompleteFrame + .nanoseconds(Int64(budgets.idleTimeout.nanoseconds)), Expiry.idle)
        guard let partial else { return idle }
        let rate = max(budgets.minFrameBytesPerSecond, 1)
        let transfer = Int64(partial.length ?? 0) * 1_000_000_000 / Int64(rate)
        let frame = partial.started + .nanoseconds(Int64(budgets.frameGrace.nanoseconds) + transfer)
        // A frame in progress is judged by its own deadline, which may be later than the idle one.
        return (frame, .frame)
    }

    /// What has expired at `now`, if anything.
    func expired(at now: NIODeadline) -> Expiry? {
        let next = nextDeadline()
        return now >= next.at ? next.expiry : nil
    }
}

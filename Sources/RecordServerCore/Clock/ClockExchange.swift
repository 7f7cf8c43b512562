/// One two-way time transfer between the server and an agent (protocol.md §6.4): the server's
/// `Heartbeat` and the agent's `HeartbeatReply`. `serverSent` and `serverReceived` are the
/// server's monotonic nanoseconds; `agentReceived` and `agentSent` the agent's.
struct ClockExchange: Sendable, Equatable {
    /// t1: the server sent the heartbeat.
    var serverSent: Int64
    /// t2: the heartbeat reached the agent.
    var agentReceived: Int64
    /// t3: the agent sent its reply.
    var agentSent: Int64
    /// t4: the reply reached the server.
    var serverReceived: Int64

    /// Time on the wire, both ways, without the agent's turnaround: (t4 − t1) − (t3 − t2).
    var roundTrip: Int64 { (serverReceived &- serverSent) &- (agentSent &- agentReceived) }

    /// The agent's clock minus the server's: ((t2 − t1) + (t3 − t4)) / 2. Exact when the two
    /// directions take equally long; otherwise off by half their difference, which no two-way
    /// exchange can see.
    var offset: Int64 { (agentReceived &- serverSent) / 2 &+ (agentSent &- serverReceived) / 2 }

    /// The server time the offset belongs to: halfway between sending and receiving.
    var serverMidpoint: Int64 { serverSent &+ (serverReceived &- serverSent) / 2 }

    /// Whether the four times can come from a real exchange: the reply came after the
    /// heartbeat on both clocks, and the round trip is neither negative nor absurd.
    var isPlausible: Bool {
        serverReceived >= serverSent && agentSent >= agentReceived && roundTrip >= 0 && roundTrip <= Self.longestRoundTrip
    }

    /// A round trip longer than this says nothing useful about the clocks (10 s).
    static let longestRoundTrip: Int64 = 10_000_000_000
}

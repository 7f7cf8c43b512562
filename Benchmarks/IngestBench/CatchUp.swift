#if canImport(Glibc)
import Glibc
#endif
import BenchSupport
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import RecordingTLS
import Shared
import WireProtocolNIO

// Catch-up mode (issue 14, finding 7): each agent streams live, is cut off, buffers what its
// cameras keep producing, and on reconnecting resumes its session and sends the backlog as fast
// as the server reads it. Measured: how long until the durable point is live again, and the rate.

/// What one agent measured in catch-up mode.
struct CatchUpResult: Sendable {
    var agentID: String
    var samplesSent = 0
    var durableSequence: UInt64?
    var acknowledged: UInt64 = 0
    /// SessionAccepted after SessionResume (monotonic ns).
    var resumedAt: UInt64 = 0
    /// Media seconds and payload bytes due but not acknowledged at the resume.
    var backlogSeconds = 0.0
    var backlogBytes = 0
    /// First Ack whose sample is less than `caughtUpLag` behind its media time (0: never).
    var caughtUpAt: UInt64 = 0
    /// Payload bytes and media seconds acknowledged from the resume to `caughtUpAt` (or to the
    /// end of the catch-up window when it never caught up).
    var catchUpBytes = 0
    var catchUpMediaSeconds = 0.0
    var catchUpWindow = 0.0
    var failure: String?

    var caughtUp: Bool { caughtUpAt != 0 }
    var lost: Int { samplesSent - Int(min(durableSequence ?? acknowledged, UInt64(samplesSent))) }
}

/// Settings of the catch-up step.
struct CatchUpPlan: Sendable {
    var liveSeconds: Int
    var outageSeconds: Int
    /// Longest wait for the durable point to become live again after the resume.
    var limitSeconds: Int
    /// Live streaming after catching up, before SessionClose.
    var tailSeconds = 5
    /// Caught up = an Ack arrives less than this behind its sample's media time (a live
    /// session's acknowledgements take 0.5–1.1 s: 1 s fragments plus read coalescing).
    var caughtUpLagNanos: Int64 = 2_000_000_000
}

/// One agent over two connections: its media clock, what it sent and what was acknowledged.
/// Lives on one event loop.
final class CatchUpAgent {
    let content: LoadContent
    let agentID: String
    let sessionID: SessionID
    let plan: CatchUpPlan
    let done: EventLoopPromise<CatchUpResult>
    var result: CatchUpResult
    /// Start of the media clock: SessionAccepted of the first connection.
    var clockStart: UInt64 = 0
    var next = 0
    /// Samples to send in all; set once caught up (or out of time).
    var total = Int.max
    var resumed = false
    /// The durable point the server reported on resuming.
    var resumeAcknowledged = 0
    var finished = false

    init(content: LoadContent, agentID: String, sessionID: SessionID, plan: CatchUpPlan, done: EventLoopPromise<CatchUpResult>) {
        self.content = content
        self.agentID = agentID
        self.sessionID = sessionID
        self.plan = plan
        self.done = done
        result = CatchUpResult(agentID: agentID)
    }

    func due(_ index: Int) -> UInt64 { clockStart &+ UInt64(content.dueOffset(index)) }

    /// Samples whose media time has come at `now`.
    func dueCount(at now: UInt64) -> Int {
        content.sampleCount(nanos: Int64(now &- clockStart))
    }

    func finish(failure: String?) {
        guard !finished else { return }
        finished = true
        result.failure = failure
        result.samplesSent = next
        done.succeed(result)
    }
}

/// One connection of a `CatchUpAgent`: Hello, then SessionOpen (first) or SessionResume
/// (second), then every due sample while the channel is writable. It sits behind
/// WireProtocolNIO's `MessageCodecHandler`, which frames its messages.
final class CatchUpConnectionHandler: ChannelDuplexHandler {
    typealias InboundIn = Message
    typealias OutboundIn = Never
    typealias OutboundOut = Message

    private let agent: CatchUpAgent
    private let reconnect: () -> Void
    private var streaming = false
    private var closing = false
    private var pacer: RepeatedTask?
    private var cut: Scheduled<Void>?
    private var plannedCut = false
    private var catchUpDeadline: Scheduled<Void>?

    init(agent: CatchUpAgent, reconnect: @escaping () -> Void) {
        self.agent = agent
        self.reconnect = reconnect
    }

    func channelActive(context: ChannelHandlerContext) {
        write(.hello(Hello(agentID: try! Identifier(validating: agent.agentID), softwareVersion: "ingest-bench 1")), context: context)
        context.flush()
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        stopTimers()
        cut?.cancel()
        if !plannedCut { agent.finish(failure: "connection closed by the server (resumed: \(agent.resumed))") }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        agent.finish(failure: error is ProtocolError ? "protocol error from server: \(error)" : "\(error)")
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        handle(unwrapInboundIn(data), context: context)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { sendDue(context: context) }
        context.fireChannelWritabilityChanged()
    }

    private func handle(_ message: Message, context: ChannelHandlerContext) {
        let loop = context.eventLoop
        let handlerBox = NIOLoopBound(self, eventLoop: loop)
        let contextBox = NIOLoopBound(context, eventLoop: loop)
        switch message {
        case .helloReply:
            if agent.clockStart == 0 {
                write(.sessionOpen(SessionOpen(sessionID: agent.sessionID, labels: [Label("bench", "catch-up")], tracks: agent.content.tracks)),
                      context: context)
            } else {
                write(.sessionResume(SessionResume(sessionID: agent.sessionID, lastAcknowledged: agent.result.acknowledged)), context: context)
            }
            context.flush()
        case .sessionAccepted(let accepted):
            streaming = true
            let now = monotonicNanos()
            if agent.clockStart == 0 {
                agent.clockStart = now
                // The cut: the connection goes away; the agent keeps its clock and buffers.
                cut = loop.scheduleTask(in: .seconds(Int64(agent.plan.liveSeconds))) {
                    let handler = handlerBox.value
                    handler.cut = nil
                    handler.plannedCut = true
                    handler.streaming = false
                    handler.stopTimers()
                    contextBox.value.close(promise: nil)
                    loop.scheduleTask(in: .seconds(Int64(handler.agent.plan.outageSeconds))) { handlerBox.value.reconnect() }
                }
            } else {
                agent.resumed = true
                agent.result.resumedAt = now
                agent.result.acknowledged = accepted.acknowledged
                agent.resumeAcknowledged = Int(accepted.acknowledged)
                agent.next = Int(accepted.acknowledged)
                let dueNow = agent.dueCount(at: now)
                agent.result.backlogBytes = agent.content.payloadBytes(count: dueNow) - agent.content.payloadBytes(count: agent.next)
                agent.result.backlogSeconds = Double(now &- agent.due(agent.next)) / 1e9
                catchUpDeadline = loop.scheduleTask(in: .seconds(Int64(agent.plan.limitSeconds))) {
                    let handler = handlerBox.value
                    handler.endCatchUp(caughtUp: false)
                    handler.sendDue(context: contextBox.value)
                }
            }
            // A 5 ms tick sends whatever has come due (as in realtime pace).
            pacer = loop.scheduleRepeatedTask(initialDelay: .zero, delay: .milliseconds(5)) { _ in
                handlerBox.value.sendDue(context: contextBox.value)
            }
        case .ack(let ack):
            let now = monotonicNanos()
            agent.result.acknowledged = max(agent.result.acknowledged, ack.sequence)
            if agent.resumed, agent.result.caughtUpAt == 0, agent.total == .max, ack.sequence > 0 {
                let lag = Int64(now) - Int64(agent.due(Int(ack.sequence) - 1))
                if lag <= agent.plan.caughtUpLagNanos { endCatchUp(caughtUp: true) }
            }
        case .heartbeat(let beat):
            let now = Int64(monotonicNanos())
            write(.heartbeatReply(HeartbeatReply(answering: beat, receiveTime: now, transmitTime: now)), context: context)
            context.flush()
        case .sessionClosed(let closed):
            agent.result.durableSequence = closed.durableSequence
            closing = true
            agent.finish(failure: closed.outcome == .finalized ? nil : "session closed as \(closed.outcome)")
            context.close(promise: nil)
        case .error(let report):
            agent.finish(failure: "server error \(report.code): \(report.message)")
            context.close(promise: nil)
        default:
            break
        }
    }

    /// The catch-up is over (caught up, or out of time): measure it, then stream live for the
    /// tail and close the session.
    private func endCatchUp(caughtUp: Bool) {
        guard agent.total == .max else { return }
        let now = monotonicNanos()
        catchUpDeadline?.cancel()
        catchUpDeadline = nil
        if caughtUp { agent.result.caughtUpAt = now }
        let acknowledged = Int(agent.result.acknowledged)
        agent.result.catchUpBytes = agent.content.payloadBytes(count: acknowledged) - agent.content.payloadBytes(count: agent.resumeAcknowledged)
        agent.result.catchUpMediaSeconds = Double(agent.content.dueOffset(acknowledged) - agent.content.dueOffset(agent.resumeAcknowledged)) / 1e9
        agent.result.catchUpWindow = Double(now &- agent.result.resumedAt) / 1e9
        agent.total = caughtUp ? agent.dueCount(at: now + UInt64(agent.plan.tailSeconds) * 1_000_000_000) : agent.next
    }

    /// Writes every due sample while the channel is writable; SessionClose after the last.
    private func sendDue(context: ChannelHandlerContext) {
        guard streaming, !closing else { return }
        let now = monotonicNanos()
        var wrote = false
        while agent.next < agent.total, context.channel.isWritable, agent.due(agent.next) <= now {
            write(.sample(agent.content.sample(agent.next)), context: context)
            agent.next += 1
            wrote = true
        }
        agent.result.samplesSent = agent.next
        if agent.next == agent.total {
            closing = true
            stopTimers()
            write(.sessionClose(SessionClose(sessionID: agent.sessionID, finalSequence: UInt64(agent.total))), context: context)
            wrote = true
        }
        if wrote { context.flush() }
    }

    private func stopTimers() {
        pacer?.cancel()
        pacer = nil
        catchUpDeadline?.cancel()
        catchUpDeadline = nil
    }

    /// A message the codec cannot encode comes back through `errorCaught` and ends the run.
    private func write(_ message: Message, context: ChannelHandlerContext) {
        context.write(wrapOutboundOut(message), promise: nil)
    }
}

/// One catch-up step: N agents against one fresh record-server.
struct CatchUpStep {
    var sessions: Int
    var agents: [CatchUpResult]
    /// Load average (1, 5, 15 min) at the cut and when the last catch-up ended.
    var loadAtCut: String
    var loadAtEnd: String
    /// Server CPU seconds from the first resume to the last catch-up's end, and that window.
    var serverCPU: Double
    var window: Double
    var verified: Int
    var verifyTarget: Int
    var problems: [String]

    var caughtUp: Int { agents.filter(\.caughtUp).count }
    var failures: [String] { agents.compactMap { a in a.failure.map { "\(a.agentID): \($0)" } } }
    var lost: Int { agents.reduce(0) { $0 + $1.lost } }
    /// Median and slowest catch-up time of the agents that caught up.
    var times: [Double] { agents.filter(\.caughtUp).map(\.catchUpWindow).sorted() }
    /// Per session: payload MB/s and media seconds per second over its catch-up window.
    var rates: [Double] { agents.map { Double($0.catchUpBytes) / 1e6 / max($0.catchUpWindow, 1e-9) }.sorted() }
    var speeds: [Double] { agents.map { $0.catchUpMediaSeconds / max($0.catchUpWindow, 1e-9) }.sorted() }
    /// All sessions together: payload acknowledged during the catch-up windows / the step's window.
    var aggregateMBps: Double { Double(agents.reduce(0) { $0 + $1.catchUpBytes }) / 1e6 / max(window, 1e-9) }
}

/// Runs N catch-up agents against a fresh record-server (resume window long enough for the outage).
func runCatchUp(_ env: BenchEnvironment, sessions n: Int, plan: CatchUpPlan, label: String) throws -> CatchUpStep {
    let directory = env.workDirectory + "/\(label)"
    let perSecond = Double(env.content.payloadBytesPerLoop) / (Double(env.content.loopNanos) / 1e9) * Double(n)
    let seconds = plan.liveSeconds + plan.outageSeconds + plan.limitSeconds + plan.tailSeconds
    let needed = UInt64(perSecond * Double(seconds) * 1.05) + (1 << 30)
    if let free = freeBytes(at: env.workDirectory), free < needed {
        throw BenchError("\(label) may write \(needed >> 30) GiB but only \(free >> 30) GiB are free under \(env.workDirectory)")
    }
    let server = try ServerUnderTest(binary: env.options.serverBinary, pki: env.pki, directory: directory, maxSessions: n + 8,
                                     fsync: env.options.fsync, resumeWindowSeconds: plan.outageSeconds + plan.limitSeconds + 60)
    usleep(200_000)
    let completions = Completions()
    var futures: [EventLoopFuture<CatchUpResult>] = []
    for i in 0..<n {
        let id = agentName(i)
        let context = try env.pki.agentContext(id)
        let loop = env.group.next()
        let done = completions.promise(on: loop, of: CatchUpResult.self)
        futures.append(done.futureResult)
        let content = env.content
        let port = server.port
        let sessionID = try Identifier(validating: "\(label)-\(id)")
        try loop.submit {
            let agent = CatchUpAgent(content: content, agentID: id, sessionID: sessionID, plan: plan, done: done)
            let agentBox = NIOLoopBound(agent, eventLoop: loop)
            @Sendable func connect() {
                ClientBootstrap(group: loop)
                    .channelOption(.tcpOption(.tcp_nodelay), value: 1)
                    .channelInitializer { channel in
                        channel.eventLoop.makeCompletedFuture {
                            let sync = channel.pipeline.syncOperations
                            try sync.addHandler(try NIOSSLClientHandler(context: context, serverHostname: nil))
                            try sync.addHandler(MessageCodecHandler())
                            try sync.addHandler(CatchUpConnectionHandler(agent: agentBox.value, reconnect: connect))
                        }
                    }
                    .connect(host: "127.0.0.1", port: port)
                    .whenFailure { error in agentBox.value.finish(failure: "connect: \(error)") }
            }
            connect()
        }.wait()
    }
    // The cut comes `liveSeconds` after each session opened; note the load then.
    usleep(UInt32(plan.liveSeconds) * 1_000_000 + 500_000)
    let loadAtCut = loadAverage()
    var cpuAtResume: Double?
    var resumeSeen: UInt64 = 0
    let t0 = monotonicNanos()
    while completions.value < n {
        usleep(250_000)
        // The first resume is `outageSeconds` after the cut: start the server's CPU clock then.
        if cpuAtResume == nil, elapsed(from: t0, to: monotonicNanos()) >= Double(plan.outageSeconds) - 0.5 {
            cpuAtResume = server.cpuSeconds
            resumeSeen = monotonicNanos()
        }
    }
    let cpuAtEnd = server.cpuSeconds
    let loadAtEnd = loadAverage()
    var agents: [CatchUpResult] = []
    for (i, f) in futures.enumerated() {
        do { agents.append(try f.wait()) } catch {
            var failed = CatchUpResult(agentID: agentName(i))
            failed.failure = "\(error)"
            agents.append(failed)
        }
    }
    let total = try server.stop()
    let firstResume = agents.map(\.resumedAt).filter { $0 > 0 }.min() ?? resumeSeen
    let lastEnd = agents.map { $0.resumedAt + UInt64($0.catchUpWindow * 1e9) }.max() ?? monotonicNanos()
    var step = CatchUpStep(sessions: n, agents: agents, loadAtCut: loadAtCut, loadAtEnd: loadAtEnd,
                           serverCPU: cpuAtEnd - (cpuAtResume ?? cpuAtEnd), window: elapsed(from: firstResume, to: lastEnd),
                           verified: 0, verifyTarget: min(n, env.options.catchUpVerify), problems: [])
    // Independent check of a few files (a full ffprobe of every file would take longer than the step).
    let (checked, problems) = checkPacketCounts(files: recordings(in: server.dataDirectory), sessions: n,
                                                sent: agents.prefix(env.options.catchUpVerify).map { ($0.agentID, $0.samplesSent) })
    step.verified = checked
    step.problems += problems
    if total.exitStatus != 0 { step.problems.append("record-server exited with status \(total.exitStatus) on SIGTERM (log: \(server.logPath))") }
    if !env.options.keep { removeTree(server.dataDirectory) }
    return step
}

func catchUpRow(_ s: CatchUpStep, plan: CatchUpPlan) -> [String] {
    let times = s.times
    let med: ([Double]) -> String = { $0.isEmpty ? "-" : format(median($0), 1) }
    return [
        "\(s.sessions)",
        "\(s.caughtUp)/\(s.sessions)",
        med(times), times.last.map { format($0, 1) } ?? "-",
        format(Double(s.agents.reduce(0) { $0 + $1.backlogBytes }) / Double(max(s.sessions, 1)) / 1e6, 1),
        med(s.rates), s.rates.first.map { format($0, 2) } ?? "-",
        med(s.speeds) + "×", s.speeds.first.map { format($0, 2) + "×" } ?? "-",
        format(s.aggregateMBps, 1),
        format(s.serverCPU / max(s.window, 1e-9) * 100, 0),
        "\(s.lost)", "\(s.verified)/\(s.verifyTarget)",
        s.loadAtCut + " → " + s.loadAtEnd,
    ]
}

let catchUpHeader = [
    "N", "caught up", "catch-up s (median)", "slowest s", "backlog MB/session", "MB/s per session (median)", "slowest MB/s",
    "× real time (median)", "slowest ×", "all sessions MB/s", "server CPU %", "lost", "files verified", "load avg at cut → end",
]

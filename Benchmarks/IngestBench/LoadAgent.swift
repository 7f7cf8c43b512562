import BenchSupport
import NIOCore
import Shared

/// What one simulated agent measured.
struct AgentResult: Sendable {
    var agentID: String
    var samplesSent = 0
    var payloadBytesSent = 0
    /// The last sequence number the server acknowledged as durable.
    var acknowledged: UInt64 = 0
    /// From SessionClosed; nil when the session never closed cleanly.
    var durableSequence: UInt64?
    /// Sample send → Ack covering it, microseconds, for every sample.
    var ackLatenciesMicros: [UInt32] = []
    /// Largest delay between a sample's due time and its send (realtime pace only), nanoseconds.
    var maxSendLagNanos: Int64 = 0
    /// Session start (SessionAccepted) and end (SessionClosed), monotonic nanoseconds.
    var startedAt: UInt64 = 0
    var endedAt: UInt64 = 0
    var failure: String?

    var lost: Int { samplesSent - Int(min(durableSequence ?? acknowledged, UInt64(samplesSent))) }
}

/// One simulated capture-agent: Hello, SessionOpen, then `seconds` of media from ``LoadContent``,
/// paced by media time (realtime) or as fast as the server accepts (max), SessionClose, and it
/// waits for SessionClosed.
/// It answers heartbeats and records when each sample was sent and when its Ack arrived.
/// Everything runs on the channel's event loop; the result completes `done`. It sits behind
/// WireProtocolNIO's `MessageCodecHandler`, which frames its messages.
final class LoadAgentHandler: ChannelDuplexHandler {
    typealias InboundIn = Message
    typealias OutboundIn = Never
    typealias OutboundOut = Message

    private enum Phase { case hello, opening, streaming, closing, finished }

    private let content: LoadContent
    private let sessionID: SessionID
    /// Samples to send.
    private let total: Int
    private let pace: Options.Pace
    private let done: EventLoopPromise<AgentResult>
    private var phase = Phase.hello
    private var result: AgentResult
    private var next = 0
    private var sendTimes: [UInt64]
    private var acknowledgedIndex = 0
    private var pacer: RepeatedTask?
    /// Samples written but not yet acknowledged; bounds memory in max pace.
    private static let maxUnacknowledgedSamples = 4096

    init(content: LoadContent, agentID: String, sessionID: SessionID, seconds: Int, pace: Options.Pace,
         done: EventLoopPromise<AgentResult>) {
        self.content = content
        self.sessionID = sessionID
        self.total = content.sampleCount(seconds: seconds)
        self.pace = pace
        self.done = done
        result = AgentResult(agentID: agentID)
        sendTimes = []
        sendTimes.reserveCapacity(total)
        result.ackLatenciesMicros.reserveCapacity(total)
    }

    func channelActive(context: ChannelHandlerContext) {
        write(.hello(Hello(agentID: try! Identifier(validating: result.agentID), softwareVersion: "ingest-bench 1")), context: context)
        context.flush()
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        pacer?.cancel()
        if phase != .finished { finish(failure: "connection closed during \(phase)") }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        finish(failure: error is ProtocolError ? "protocol error from server: \(error)" : "\(error)")
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
        switch message {
        case .helloReply:
            phase = .opening
            write(.sessionOpen(SessionOpen(sessionID: sessionID, labels: [Label("bench", "ingest")], tracks: content.tracks)), context: context)
            context.flush()
        case .sessionAccepted:
            phase = .streaming
            result.startedAt = monotonicNanos()
            if pace == .realtime {
                // A 5 ms tick sends whatever has come due; finer ticks only cost CPU.
                let handlerBox = NIOLoopBound(self, eventLoop: context.eventLoop)
                let contextBox = NIOLoopBound(context, eventLoop: context.eventLoop)
                pacer = context.eventLoop.scheduleRepeatedTask(initialDelay: .zero, delay: .milliseconds(5)) { _ in
                    handlerBox.value.sendDue(context: contextBox.value)
                }
            } else {
                sendDue(context: context)
            }
        case .ack(let ack):
            let now = monotonicNanos()
            result.acknowledged = max(result.acknowledged, ack.sequence)
            while acknowledgedIndex < min(Int(ack.sequence), next) {
                result.ackLatenciesMicros.append(UInt32(clamping: (now &- sendTimes[acknowledgedIndex]) / 1000))
                acknowledgedIndex += 1
            }
            if pace == .max { sendDue(context: context) }
        case .heartbeat(let beat):
            let now = Int64(monotonicNanos())
            write(.heartbeatReply(HeartbeatReply(answering: beat, receiveTime: now, transmitTime: now)), context: context)
            context.flush()
        case .sessionClosed(let closed):
            result.durableSequence = closed.durableSequence
            result.endedAt = monotonicNanos()
            finish(failure: closed.outcome == .finalized ? nil : "session closed as \(closed.outcome)")
            context.close(promise: nil)
        case .error(let report):
            finish(failure: "server error \(report.code): \(report.message)")
            context.close(promise: nil)
        default:
            break
        }
    }

    /// Writes every sample that is due (realtime) or allowed (max) while the channel is writable.
    private func sendDue(context: ChannelHandlerContext) {
        guard phase == .streaming else { return }
        let now = monotonicNanos()
        var wrote = false
        while next < total, context.channel.isWritable {
            if pace == .realtime {
                let due = result.startedAt &+ UInt64(content.dueOffset(next))
                guard due <= now else { break }
                result.maxSendLagNanos = max(result.maxSendLagNanos, Int64(now &- due))
            } else if next - acknowledgedIndex >= Self.maxUnacknowledgedSamples {
                break
            }
            let sample = content.sample(next)
            sendTimes.append(now)
            result.payloadBytesSent += sample.data.readableBytes
            write(.sample(sample), context: context)
            next += 1
            wrote = true
        }
        result.samplesSent = next
        if next == total {
            pacer?.cancel()
            pacer = nil
            phase = .closing
            write(.sessionClose(SessionClose(sessionID: sessionID, finalSequence: UInt64(total))), context: context)
            wrote = true
        }
        if wrote { context.flush() }
    }

    /// A message the codec cannot encode comes back through `errorCaught` and ends the run.
    private func write(_ message: Message, context: ChannelHandlerContext) {
        context.write(wrapOutboundOut(message), promise: nil)
    }

    private func finish(failure: String?) {
        guard phase != .finished else { return }
        phase = .finished
        pacer?.cancel()
        result.failure = failure
        if result.endedAt == 0 { result.endedAt = monotonicNanos() }
        done.succeed(result)
    }
}

import BenchSupport
import NIOCore
import NIOSSL
import NIOTLS

/// The peer: one `ffmpeg` process per session, listening for TLS (`-listen 1 … tls://…`, with the
/// same server certificate as record-server), reading Matroska and writing MP4 with `-c copy`.
enum FFmpegPeer {
    static func arguments(port: Int, pki: BenchPKI, output: String) -> [String] {
        ["ffmpeg", "-nostdin", "-hide_banner", "-v", "error", "-f", "matroska",
         "-listen", "1", "-cert_file", pki.serverCertPath, "-key_file", pki.serverKeyPath, "-i", "tls://127.0.0.1:\(port)",
         "-map", "0", "-c", "copy", "-y", output]
    }

    /// The command line as documented (paths shortened).
    static let documented = "ffmpeg -nostdin -v error -f matroska -listen 1 -cert_file server.pem -key_file server-key.pem -i tls://127.0.0.1:PORT -map 0 -c copy -y out.mp4"
}

/// What one byte sender measured.
struct StreamResult: Sendable {
    var bytesSent = 0
    var maxSendLagNanos: Int64 = 0
    var startedAt: UInt64 = 0
    var endedAt: UInt64 = 0
    var failure: String?
}

/// Sends a prepared Matroska stream to one ffmpeg listener over TLS, either paced evenly over
/// `durationNanos` (realtime) or as fast as the connection takes it (max), then closes.
final class StreamSenderHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let stream: ByteBuffer
    private let durationNanos: Int64
    private let pace: Options.Pace
    private let done: EventLoopPromise<StreamResult>
    private var offset = 0
    private var result = StreamResult()
    private var pacer: RepeatedTask?
    private var finished = false
    private var started = false
    private static let chunk = 64 << 10

    init(stream: ByteBuffer, durationNanos: Int64, pace: Options.Pace, done: EventLoopPromise<StreamResult>) {
        self.stream = stream
        self.durationNanos = durationNanos
        self.pace = pace
        self.done = done
    }

    /// Realtime pace starts with the connection (its first writes wait in NIOSSL for the
    /// handshake, a few kilobytes). Max pace starts once TLS is up: NIOSSL keeps writes made
    /// before the handshake and encrypts them all at once afterwards, so starting earlier would
    /// put the whole stream (1.3 GB at 1800 s) in memory per connection.
    func channelActive(context: ChannelHandlerContext) {
        if pace == .realtime { start(context: context) }
        context.fireChannelActive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if pace == .max, case TLSUserEvent.handshakeCompleted = event { start(context: context) }
        context.fireUserInboundEventTriggered(event)
    }

    private func start(context: ChannelHandlerContext) {
        started = true
        result.startedAt = monotonicNanos()
        if pace == .realtime {
            let handlerBox = NIOLoopBound(self, eventLoop: context.eventLoop)
            let contextBox = NIOLoopBound(context, eventLoop: context.eventLoop)
            pacer = context.eventLoop.scheduleRepeatedTask(initialDelay: .zero, delay: .milliseconds(5)) { _ in
                handlerBox.value.sendDue(context: contextBox.value)
            }
        } else {
            sendDue(context: context)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { sendDue(context: context) }
        context.fireChannelWritabilityChanged()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

    func channelInactive(context: ChannelHandlerContext) {
        finish(failure: offset < stream.readableBytes ? "connection closed after \(offset) bytes" : nil)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // ffmpeg closes without a TLS close_notify once it has read everything; that is not a failure.
        if offset >= stream.readableBytes { return }
        finish(failure: "\(error)")
        context.close(promise: nil)
    }

    private func sendDue(context: ChannelHandlerContext) {
        guard started, !finished, offset < stream.readableBytes else { return }
        let now = monotonicNanos()
        let total = stream.readableBytes
        var allowed = total
        if pace == .realtime {
            let elapsed = Double(now &- result.startedAt)
            allowed = min(total, Int(Double(total) * elapsed / Double(durationNanos)))
        }
        var lastWrite: EventLoopFuture<Void>?
        while offset < allowed, context.channel.isWritable {
            let n = min(Self.chunk, allowed - offset)
            let promise: EventLoopPromise<Void>? = offset + n == total ? context.eventLoop.makePromise() : nil
            // Flushed chunk by chunk: NIOSSL holds unflushed writes itself, so the channel would
            // stay writable and the whole stream would be encrypted into memory at once.
            context.writeAndFlush(wrapOutboundOut(stream.getSlice(at: stream.readerIndex + offset, length: n)!), promise: promise)
            lastWrite = promise?.futureResult
            offset += n
        }
        if pace == .realtime, offset < allowed {
            // Behind schedule: how late is the first byte still unsent?
            let dueAt = Double(offset) / Double(total) * Double(durationNanos)
            result.maxSendLagNanos = max(result.maxSendLagNanos, Int64(Double(now &- result.startedAt) - dueAt))
        }
        result.bytesSent = offset
        if offset == total, let lastWrite {
            pacer?.cancel()
            // Close once the last byte is on the socket (closing earlier would drop pending writes).
            // TLS has no half-close: this sends close_notify, and ffmpeg then sees the end of input.
            let contextBox = NIOLoopBound(context, eventLoop: context.eventLoop)
            let handlerBox = NIOLoopBound(self, eventLoop: context.eventLoop)
            lastWrite.whenComplete { _ in
                handlerBox.value.result.endedAt = monotonicNanos()
                contextBox.value.close(promise: nil)
            }
        }
    }

    private func finish(failure: String?) {
        guard !finished else { return }
        finished = true
        pacer?.cancel()
        result.failure = failure
        if result.endedAt == 0 { result.endedAt = monotonicNanos() }
        done.succeed(result)
    }
}

import NIOCore

/// Counts the read requests that reach the socket end of the pipeline.
final class ReadCounter: ChannelOutboundHandler {
    typealias OutboundIn = NIOAny
    var reads = 0
    func read(context: ChannelHandlerContext) {
        reads += 1
        context.read()
    }
}

import Foundation
import NIOCore
import NIOPosix
import NIOSSL
@testable import RecordServerCore
import Shared
import WireProtocolNIO

/// A minimal agent built only from the shared protocol code (WireProtocolNIO's codec handler): connects over TLS (or plain TCP),
/// and lets a test send exactly the messages it wants and read what comes back.
final class TestAgent: @unchecked Sendable {
    let channel: any Channel
    private var iterator: AsyncThrowingStream<Message, any Error>.AsyncIterator

    /// Hands every decoded message (and the end of the connection) to an async stream.
    private final class Collector: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = Message
        let continuation: AsyncThrowingStream<Message, any Error>.Continuation
        init(_ continuation: AsyncThrowingStream<Message, any Error>.Continuation) { self.continuation = continuation }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) { continuation.yield(unwrapInboundIn(data)) }
        func channelInactive(context: ChannelHandlerContext) { continuation.finish() }
        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            continuation.finish(throwing: error)
            context.close(promise: nil)
        }
    }

    private init(channel: any Channel, stream: AsyncThrowingStream<Message, any Error>) {
        self.channel = channel
        iterator = stream.makeAsyncIterator()
    }

    static func connect(port: Int, tls: TLSConfiguration?, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) async throws -> TestAgent {
        let context = try tls.map { try NIOSSLContext(configuration: $0) }
        let (stream, continuation) = AsyncThrowingStream<Message, any Error>.makeStream()
        let channel = try await ClientBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    if let context { try sync.addHandler(try NIOSSLClientHandler(context: context, serverHostname: "localhost")) }
                    try sync.addHandler(MessageCodecHandler())
                    try sync.addHandler(Collector(continuation))
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        return TestAgent(channel: channel, stream: stream)
    }

    func send(_ message: Message) async throws { try await channel.writeAndFlush(message).get() }

    /// Sends raw bytes, bypassing the encoder (for malformed-frame tests).
    func sendRaw(_ bytes: [UInt8]) async throws {
        // Below the encoder: straight onto the (TLS) byte stream.
        let channel = self.channel
        try await channel.eventLoop.flatSubmit {
            let context = try! channel.pipeline.syncOperations.context(handlerType: MessageCodecHandler.self)
            return context.writeAndFlush(NIOAny(ByteBuffer(bytes: bytes)))
        }.get()
    }

    /// The next message, skipping heartbeats and (unless asked for) acks; nil when the connection closed.
    func next(skippingAcks: Bool = false) async throws -> Message? {
        while let message = try await iterator.next() {
            if case .heartbeatReply = message { continue }
            if case .heartbeat = message { continue }  // the server's own (protocol.md §6.3)
            if case .startSession = message { startCommands += 1 }
            if skippingAcks, case .ack = message { continue }
            if skippingAcks, case .remoteAck = message { continue }
            return message
        }
        return nil
    }

    /// Reads until a message matching `predicate` arrives; remembers the highest ack seen.
    func wait(for description: String, _ predicate: (Message) -> Bool) async throws -> Message {
        while let message = try await next() {
            if case .ack(let ack) = message { highestAck = max(highestAck, ack.sequence) }
            if predicate(message) { return message }
            if case .error(let report) = message, !predicate(message) {
                throw TestAgentError("while waiting for \(description): server sent error \(report.code): \(report.message)")
            }
        }
        throw TestAgentError("connection closed while waiting for \(description)")
    }

    /// Sends a Heartbeat and reads until its reply: the server has handled everything sent
    /// before it (it answers in order). Acks read on the way count.
    func roundTrip(nonce: UInt64 = 7) async throws {
        try await send(.heartbeat(Heartbeat(nonce: nonce, originTime: 0)))
        while let message = try await iterator.next() {
            switch message {
            case .ack(let ack): highestAck = max(highestAck, ack.sequence)
            case .heartbeatReply(let reply) where reply.nonce == nonce: return
            case .error(let report): throw TestAgentError("while waiting for the heartbeat reply: server sent error \(report.code): \(report.message)")
            default: continue
            }
        }
        throw TestAgentError("connection closed while waiting for the heartbeat reply")
    }

    var highestAck: UInt64 = 0
    /// StartSession commands seen so far.
    var startCommands = 0

    func hello(agentID: Identifier, token: String? = nil) async throws -> HelloReply {
        try await send(.hello(Hello(agentID: agentID, softwareVersion: "test-agent 1", bearerToken: token)))
        guard case .helloReply(let reply)? = try await next() else { throw TestAgentError("no HelloReply") }
        return reply
    }

    func open(_ open: SessionOpen) async throws -> UInt64 {
        try await send(.sessionOpen(open))
        let reply = try await wait(for: "SessionAccepted") { if case .sessionAccepted = $0 { true } else { false } }
        guard case .sessionAccepted(let accepted) = reply else { throw TestAgentError("unreachable") }
        return accepted.acknowledged
    }

    func resume(_ id: SessionID, lastAcknowledged: UInt64) async throws -> UInt64 {
        try await send(.sessionResume(SessionResume(sessionID: id, lastAcknowledged: lastAcknowledged)))
        let reply = try await wait(for: "SessionAccepted after resume") { if case .sessionAccepted = $0 { true } else { false } }
        guard case .sessionAccepted(let accepted) = reply else { throw TestAgentError("unreachable") }
        return accepted.acknowledged
    }

    func close(_ id: SessionID, finalSequence: UInt64) async throws -> SessionClosed {
        try await send(.sessionClose(SessionClose(sessionID: id, finalSequence: finalSequence)))
        let reply = try await wait(for: "SessionClosed") { if case .sessionClosed = $0 { true } else { false } }
        guard case .sessionClosed(let closed) = reply else { throw TestAgentError("unreachable") }
        return closed
    }

    func disconnect() async {
        try? await channel.close()
    }
}

struct TestAgentError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

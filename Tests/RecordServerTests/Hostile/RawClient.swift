import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import TestSupport

/// A hostile peer: bytes in, bytes out, over TLS (NIOSSL, a certificate from the test CA) or
/// plain TCP. No protocol code of ours below it: it writes what `Wire` builds and splits what
/// arrives into frames by the §3 header alone.
final class RawClient: @unchecked Sendable {
    let channel: any Channel
    private let inbox: Inbox

    /// What arrived, collected on the event loop and read by polling (bounded) from tests.
    private final class Inbox: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        private let lock = NSLock()
        private var bytes: [UInt8] = []
        private var closed = false
        private var failure: (any Error)?

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var buffer = unwrapInboundIn(data)
            let chunk = buffer.readBytes(length: buffer.readableBytes) ?? []
            lock.withLock { bytes += chunk }
        }
        func channelInactive(context: ChannelHandlerContext) { lock.withLock { closed = true } }
        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            lock.withLock { failure = failure ?? error }
            context.close(promise: nil)
        }

        /// A complete frame (type, payload), `.closed` once nothing more can come, or nil for "not yet".
        func take() -> Arrival? {
            lock.withLock {
                if bytes.count >= Wire.headerSize {
                    let length = bytes[8..<12].reduce(0) { $0 << 8 | Int($1) }
                    if bytes.count >= Wire.headerSize + length {
                        let type = bytes[5]
                        let payload = Array(bytes[Wire.headerSize..<(Wire.headerSize + length)])
                        bytes.removeFirst(Wire.headerSize + length)
                        return .frame(type: type, payload: payload)
                    }
                }
                return closed ? .closed(failure) : nil
            }
        }
        var isClosed: Bool { lock.withLock { closed } }
    }

    enum Arrival {
        case frame(type: UInt8, payload: [UInt8])
        case closed((any Error)?)
    }

    private init(channel: any Channel, inbox: Inbox) {
        self.channel = channel
        self.inbox = inbox
    }

    static func connect(port: Int, tls: TLSConfiguration?) async throws -> RawClient {
        try await connect(port: port, context: try tls.map { try NIOSSLContext(configuration: $0) })
    }

    /// With a prepared context (the mass cases share one per agent identity).
    static func connect(port: Int, context: NIOSSLContext?) async throws -> RawClient {
        let inbox = Inbox()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let context {
                        try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: context, serverHostname: "localhost"))
                    }
                    try channel.pipeline.syncOperations.addHandler(inbox)
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        return RawClient(channel: channel, inbox: inbox)
    }

    /// `count` peers connect at once, each sends a Hello that declares the 64 KiB
    /// pre-authentication maximum and only 60 KiB of it, and waits for the server's answer;
    /// the error codes they got (nil: none, the connection closed). Together they want more
    /// than the 4 MiB pre-authentication budget (protocol.md §9). `track` sees every client.
    static func partialHelloFlood(port: Int, context: NIOSSLContext, count: Int = 100,
                                  track: @escaping @Sendable (RawClient) -> Void = { _ in }) async throws -> [UInt16?] {
        let partial = Wire.frame(Wire.Kind.hello.rawValue, [UInt8](repeating: 1, count: 60 * 1024), length: 64 * 1024)
        return try await withThrowingTaskGroup(of: UInt16?.self) { group in
            for _ in 0..<count {
                group.addTask {
                    let client = try await RawClient.connect(port: port, context: context)
                    track(client)
                    try await client.send(partial)
                    // No answer (the server closed, or nothing within 30 s) is a result
                    // here, reported as nil; the callers count the codes that did arrive.
                    let reply = try? await client.message(within: .seconds(30))
                    await client.close()
                    return reply.flatMap { if case .error(let code, _, _) = $0 { code } else { nil } }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
    }

    /// Writes in pieces of at most 64 KiB, each flushed and awaited, so a peer that stops
    /// reading holds our memory to one piece, not the whole frame.
    func send(_ bytes: [UInt8]) async throws {
        var offset = 0
        repeat {
            let end = min(bytes.count, offset + 65536)
            try await channel.writeAndFlush(ByteBuffer(bytes: bytes[offset..<end])).get()
            offset = end
        } while offset < bytes.count
    }

    /// The next frame the server sends, `.closed` when the connection ended. Bounded: throws
    /// when nothing arrived within `limit`.
    func next(within limit: Duration = .seconds(20)) async throws -> Arrival {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if let arrival = inbox.take() { return arrival }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw TestAgentError("nothing from the server within \(limit)")
    }

    /// The next message other than heartbeats and acks (a session's acks come whenever a
    /// fragment is durable); nil when the connection closed. Answers server heartbeats (§7.4)
    /// unless told not to.
    func message(within limit: Duration = .seconds(20), keepingAcks: Bool = false, answeringHeartbeats: Bool = true) async throws -> ServerMessage? {
        let deadline = ContinuousClock.now + limit
        while true {
            switch try await next(within: deadline - ContinuousClock.now) {
            case .closed: return nil
            case .frame(let type, let payload):
                let message = try ServerMessage(type: type, payload: payload)
                switch message {
                case .heartbeat(let nonce):
                    if answeringHeartbeats { try? await send(Wire.frame(.heartbeatReply, Wire.heartbeatReplyPayload(nonce: nonce))) }
                case .heartbeatReply: continue
                case .ack where !keepingAcks: continue
                default: return message
                }
            }
        }
    }

    /// Sends Hello and expects HelloReply.
    func hello(_ agentID: String) async throws -> ServerMessage {
        try await send(Wire.hello(agentID))
        let reply = try await message()
        guard case .helloReply? = reply else { throw TestAgentError("expected HelloReply, got \(reply.map { "\($0)" } ?? "a closed connection")") }
        return reply!
    }

    /// Opens a one-track Opus session and expects SessionAccepted(0).
    func open(_ id: String, track: Wire.Track) async throws {
        try await send(Wire.sessionOpen(id: Array(id.utf8), tracks: [track]))
        let reply = try await message()
        guard case .sessionAccepted(id, 0)? = reply else {
            throw TestAgentError("expected SessionAccepted(\(id), 0), got \(reply.map { "\($0)" } ?? "a closed connection")")
        }
    }

    /// The code of the first Error the server sends, or nil once `sent` is set and 2 s more
    /// brought nothing (the server holds what was sent) or the connection ended without one.
    /// Bounded: 120 s.
    func errorCode(orHeldAfter sent: SendFlag) async -> UInt16? {
        let deadline = ContinuousClock.now + .seconds(120)
        var quietSince: ContinuousClock.Instant?
        while ContinuousClock.now < deadline {
            switch inbox.take() {
            case .frame(let type, let payload)?:
                if case .error(let code, _, _)? = try? ServerMessage(type: type, payload: payload) { return code }
                continue
            case .closed?: return nil
            case nil: break
            }
            if sent.isSet {
                quietSince = quietSince ?? .now
                if ContinuousClock.now - quietSince! > .seconds(2) { return nil }
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }

    /// True once the server closed the connection (or TLS failed), polled up to `limit`.
    func closedByServer(within limit: Duration) async -> Bool {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if inbox.isClosed { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return inbox.isClosed
    }

    /// Closes with a TCP reset (SO_LINGER 0), below TLS: no close_notify, as a crashed or
    /// unplugged agent would.
    func reset() async {
        let channel = self.channel
        try? await (channel as? any SocketOptionProvider)?.setSoLinger(linger(l_onoff: 1, l_linger: 0)).get()
        try? await channel.eventLoop.flatSubmit { () -> EventLoopFuture<Void> in
            let promise = channel.eventLoop.makePromise(of: Void.self)
            if let tls = try? channel.pipeline.syncOperations.context(handlerType: NIOSSLClientHandler.self) {
                tls.close(promise: promise)
            } else {
                channel.close(promise: promise)
            }
            return promise.futureResult
        }.get()
    }

    func close() async { try? await channel.close() }
}

/// Set once a background send has finished (or failed).
final class SendFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}

/// Plain blocking TCP sockets for the mass cases (1000 idle connections, stalled TLS
/// handshakes): a NIO channel each would measure our client more than the server.
enum PlainSocket {
    static func connect(port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestAgentError("socket(): errno \(errno)") }
        let ok = LoopbackPort.connect(fd, port: port)
        guard ok else {
            let e = errno
            Glibc.close(fd)
            throw TestAgentError("connect(): errno \(e)")
        }
        return fd
    }

    static func send(_ fd: Int32, _ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// True when the peer has closed or reset the connection; drains whatever it sent first
    /// (a TLS alert, an Error frame).
    static func closedByPeer(_ fd: Int32) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if n == 0 { return true }
            if n < 0 { return errno != EAGAIN && errno != EWOULDBLOCK }
        }
    }
}

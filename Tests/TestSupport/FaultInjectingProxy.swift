import Foundation
import NIOCore
import NIOPosix

/// Copies the bytes it reads to its partner channel (unless the proxy is silent: then they are
/// dropped, as a network that loses every packet would); closes the partner when its own side goes.
final class ProxyRelay: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    let partner: Channel
    let proxy: FaultInjectingProxy
    init(partner: Channel, proxy: FaultInjectingProxy) {
        self.partner = partner
        self.proxy = proxy
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !proxy.isSilent else { return }
        partner.writeAndFlush(unwrapInboundIn(data), promise: nil)
    }
    func channelInactive(context: ChannelHandlerContext) {
        partner.close(promise: nil)
        context.fireChannelInactive()
    }
    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
        partner.close(promise: nil)
    }
}

/// On an accepted connection: refuses it while the proxy is cut, otherwise connects to the
/// target and glues both directions together.
final class ProxyAccept: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    let proxy: FaultInjectingProxy
    init(proxy: FaultInjectingProxy) { self.proxy = proxy }

    func channelActive(context: ChannelHandlerContext) {
        context.fireChannelActive()
        let child = context.channel
        guard proxy.admit(child, isNewConnection: true) else {
            child.close(promise: nil)
            return
        }
        let proxy = self.proxy
        ClientBootstrap(group: child.eventLoop)
            .channelInitializer { outbound in
                outbound.eventLoop.makeCompletedFuture {
                    try outbound.pipeline.syncOperations.addHandler(ProxyRelay(partner: child, proxy: proxy))
                }
            }
            .connect(host: "127.0.0.1", port: proxy.targetPort)
            .whenComplete { result in
                switch result {
                case .failure:
                    child.close(promise: nil)
                case .success(let outbound):
                    guard proxy.admit(outbound) else {
                        outbound.close(promise: nil)
                        child.close(promise: nil)
                        return
                    }
                    child.eventLoop.execute {
                        do {
                            try child.pipeline.syncOperations.addHandler(ProxyRelay(partner: outbound, proxy: proxy))
                            child.setOption(ChannelOptions.autoRead, value: true).whenComplete { _ in child.read() }
                        } catch {
                            child.close(promise: nil)
                            outbound.close(promise: nil)
                        }
                    }
                }
            }
    }
}

/// A TCP proxy on loopback that can cut the network: `cut()` closes every current connection
/// and drops new ones until `restore()`.
public final class FaultInjectingProxy: @unchecked Sendable {
    public let targetPort: Int
    private let lock = NSLock()
    private var isCut = false
    private var open: [ObjectIdentifier: Channel] = [:]
    private var accepted = 0
    private var refused = 0
    private var listener: Channel?

    public var port: Int { listener?.localAddress?.port ?? 0 }
    /// Connections accepted and forwarded / refused while cut.
    public var counts: (accepted: Int, refused: Int) { lock.withLock { (accepted, refused) } }

    /// Listens on `host` (loopback unless asked, e.g. a ``NetworkHosts`` bridge address, so
    /// that processes on those hosts reach a loopback-only server through it).
    public init(group: EventLoopGroup, targetPort: Int, host: String = "127.0.0.1") async throws {
        self.targetPort = targetPort
        listener = try await ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.autoRead, value: false)
            .childChannelInitializer { [self] child in
                child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.addHandler(ProxyAccept(proxy: self))
                }
            }
            .bind(host: host, port: 0).get()
    }

    /// Registers a channel of a forwarded connection, or says no (and counts it) while cut.
    fileprivate func admit(_ channel: Channel, isNewConnection: Bool = false) -> Bool {
        let ok = lock.withLock { () -> Bool in
            if isCut { refused += 1; return false }
            open[ObjectIdentifier(channel)] = channel
            if isNewConnection { accepted += 1 }
            return true
        }
        if ok {
            channel.closeFuture.whenComplete { [self] _ in
                lock.withLock { _ = open.removeValue(forKey: ObjectIdentifier(channel)) }
            }
        }
        return ok
    }

    public func cut() {
        let channels = lock.withLock { () -> [Channel] in
            isCut = true
            return Array(open.values)
        }
        for c in channels { c.close(promise: nil) }
    }

    public func restore() { lock.withLock { isCut = false; silent = false } }

    /// Keeps every connection open but delivers nothing in either direction until
    /// ``restore()``: a server that went silent (a dead route, a hung host).
    public func silence() { lock.withLock { silent = true } }

    var isSilent: Bool { lock.withLock { silent } }
    private var silent = false

    public func close() async {
        cut()
        try? await listener?.close()
    }
}

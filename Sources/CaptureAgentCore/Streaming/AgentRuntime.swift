import Foundation
import Synchronization
public import Shared
public import Logging
public import NIOCore
import NIOPosix
public import NIOSSL
public import WireProtocol
import WireProtocolNIO

/// Everything the running agent needs, whether it came from flags or a config file.
public struct AgentSettings: Sendable {
    /// The record-servers to connect to, tried in turn (``ServerRotation``): one, or the
    /// fleet's, for failover. Never empty. The initialiser's `host`, `port` and `tlsHostname`
    /// make it a list of one; set this for more.
    public var servers: [ServerAddress]
    public var tls: TLSConfiguration
    public var agentID: Identifier
    public var bearerToken: String?
    public var sources: [SourceSpec]
    public var video: VideoEncodingSettings
    public var audio: AudioEncodingSettings
    public var bufferLimits: ResendBuffer.Limits
    public var backoff: ReconnectBackoff
    /// Start a session at once instead of waiting for the server's StartSession.
    public var record: Bool
    public var sessionID: Identifier?
    /// Stop the (self-started) session after this many seconds.
    public var duration: Double?
    public var labels: [Label]
    var fastFiles: Bool
    /// Units between each source and its encoder.
    var videoQueueFrames: Int
    var audioQueueChunks: Int
    /// After a stop request, how long to wait for the server to confirm the closed session
    /// before exiting anyway (with an error naming what was not acknowledged). Nanoseconds.
    public var stopTimeout: Int64
    /// When the agent's own certificate expires, so that a server's refusal of it can name the
    /// date; nil with a bearer token.
    var certificateExpiry: Date?
    /// Logged once the logger exists (a certificate close to its expiry).
    var startupWarnings: [String] = []
    /// For tests and the multi-host bench: stamp everything with a ``SkewedClock`` (nil: the
    /// machine's CLOCK_MONOTONIC, as in production).
    var clockSkew: (offset: Int64, driftPPM: Double)?
    /// For the multi-host bench: test sources start on a whole second of CLOCK_MONOTONIC, so
    /// agents sharing a kernel flash and beep at the same real instants.
    var testSourcesOnWholeSeconds = false

    /// The clock the agent stamps with.
    func makeClock() -> any MonotonicClock {
        clockSkew.map { SkewedClock(offset: $0.offset, driftPPM: $0.driftPPM) } ?? SystemMonotonicClock()
    }

    public init(host: String, port: Int, tls: TLSConfiguration, tlsHostname: String?, agentID: Identifier,
                bearerToken: String? = nil, sources: [SourceSpec], video: VideoEncodingSettings = .init(),
                audio: AudioEncodingSettings = .init(), bufferLimits: ResendBuffer.Limits = .init(),
                backoff: ReconnectBackoff = .init(), record: Bool = false, sessionID: Identifier? = nil,
                duration: Double? = nil, labels: [Label] = [], fastFiles: Bool = false,
                videoQueueFrames: Int = 8, audioQueueChunks: Int = 25, stopTimeout: Int64 = 30_000_000_000) {
        self.servers = [ServerAddress(host: host, port: port, tlsHostname: tlsHostname)]
        self.tls = tls
        self.agentID = agentID
        self.bearerToken = bearerToken
        self.sources = sources
        self.video = video
        self.audio = audio
        self.bufferLimits = bufferLimits
        self.backoff = backoff
        self.record = record
        self.sessionID = sessionID
        self.duration = duration
        self.labels = labels
        self.fastFiles = fastFiles
        self.videoQueueFrames = videoQueueFrames
        self.audioQueueChunks = audioQueueChunks
        self.stopTimeout = stopTimeout
    }
}

/// Why the agent stopped with an error.
struct AgentRuntimeError: Error, Sendable, CustomStringConvertible {
    var message: String
    /// The process exit status: 1, or ``ConnectionFailure/permanentExitCode`` for a refusal
    /// that retrying cannot fix.
    var exitCode: Int32
    init(_ message: String, exitCode: Int32 = 1) {
        self.message = message
        self.exitCode = exitCode
    }
    var description: String { message }
}

/// The running agent: one TLS connection (re-established as needed), the capture
/// pipelines of the current session, and the ``AgentStateMachine`` between them.
///
/// All state lives on one event loop: channel callbacks arrive there, and pipeline
/// threads hop onto it with `execute`. The state machine decides; this class only
/// carries out its actions (writes, closes, timers, starting and stopping capture).
public final class AgentRuntime: MCRPConnectionDelegate, @unchecked Sendable {
    private let settings: AgentSettings
    private let clock: any MonotonicClock
    private let logger: Logger
    private let group: any EventLoopGroup
    private let eventLoop: any EventLoop
    private let sslContext: NIOSSLContext
    private var machine: AgentStateMachine
    private var channel: (any Channel)?
    private var rotation: ServerRotation
    /// The address of the current connection attempt (for error messages).
    private var server: ServerAddress
    private var connection = 0
    private var connected = false
    private var capture = Capture.idle
    /// Counts captures: each capture's pipelines report through a ``CaptureSink`` stamped with
    /// its number, so that a pipeline of an earlier capture, still winding down, cannot end a
    /// track of (or add samples to) the session that followed it.
    private var captureNumber: UInt64 = 0
    /// The current capture's sink (pipelines hold theirs weakly; an earlier capture's goes
    /// when the next capture starts, and its pipelines' events with it).
    private var captureSink: CaptureSink?
    private var lifecycle = Lifecycle.running
    private var ticker: RepeatedTask?
    private var durationTimer: Scheduled<Void>?
    /// A flush / a pump is already queued on the event loop (``flushSoon()``, ``pumpSoon()``).
    private var flushPending = false
    private var pumpPending = false
    private let done: EventLoopPromise<Void>
    private var failure: AgentRuntimeError?
    /// Set once the server refused this agent for good; the next disconnect ends the agent.
    private var refusal: String?

    /// Capture, one of these at a time.
    private enum Capture {
        /// No pipelines: waiting for a start (from the server, or `--record`'s own).
        case idle
        /// Devices are being opened, on a thread of their own (it may block).
        case building
        /// The session's pipelines run. `stopping`: every track was given the stop instant.
        /// `endedTracks`: tracks whose source ended on its own (a file read to its end).
        case running(pipelines: [SourcePipeline], stopping: Bool, endedTracks: Set<UInt8>)
    }

    /// The agent's own life.
    private enum Lifecycle: Equatable {
        case running
        /// A stop was asked for: capture ends, the session closes, then the agent finishes.
        case shuttingDown
        /// `run()` returns: no more reconnects or captures.
        case finished
    }

    private var pipelines: [SourcePipeline] {
        if case .running(let pipelines, _, _) = capture { pipelines } else { [] }
    }

    /// Pipelines told to stop whose threads may still be running. ``run()`` waits for them
    /// before it returns: their last events go through the event loop, which whoever called
    /// `run()` may shut down as soon as it returns.
    private var windingDown: [SourcePipeline] = []

    private var finished: Bool { lifecycle == .finished }
    /// ``finished``, readable off the event loop: set before `run()` can return.
    private let hasFinished = Atomic<Bool>(false)
    private var shuttingDown: Bool { lifecycle == .shuttingDown }

    public init(settings: AgentSettings, clock: any MonotonicClock = SystemMonotonicClock(), logger: Logger,
                group: any EventLoopGroup, random: any RandomNumberGenerator & Sendable = SplitMix64(seed: UInt64.random(in: .min ... .max))) throws {
        self.settings = settings
        self.clock = clock
        self.logger = logger
        self.group = group
        self.eventLoop = group.next()
        guard let first = settings.servers.first else { throw AgentRuntimeError("no record-server address given") }
        self.rotation = ServerRotation(settings.servers)
        self.server = first
        self.sslContext = try NIOSSLContext(configuration: settings.tls)
        self.machine = AgentStateMachine(
            configuration: .init(agentID: settings.agentID, softwareVersion: "capture-agent/1.0", bearerToken: settings.bearerToken,
                                 bufferLimits: settings.bufferLimits, backoff: settings.backoff),
            random: random)
        self.done = eventLoop.makePromise()
    }

    /// Runs until the self-started session is finished (`--record` with `--duration` or a
    /// shutdown request), or forever when commanded by the server.
    public func run() async throws {
        eventLoop.execute { [self] in
            ticker = eventLoop.scheduleRepeatedTask(initialDelay: .milliseconds(200), delay: .milliseconds(200)) { [self] _ in
                perform(machine.tick(now: clock.now()))
            }
            connect()
            if settings.record { startCapture(labels: []) }
        }
        do {
            try await done.futureResult.get()
        } catch {
            await joinPipelines()
            throw error
        }
        await joinPipelines()
    }

    /// Waits, off the event loop, until every pipeline thread has ended, at most a few seconds
    /// (a device read that hangs must not keep the agent from exiting).
    private func joinPipelines() async {
        // The loop runs until run()'s caller shuts it down; if it is already gone there is
        // nothing left to wait for.
        let threads = (try? await eventLoop.submit { [self] in windingDown + pipelines }.get()) ?? []
        guard !threads.isEmpty else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                let deadline = DispatchTime.now() + .nanoseconds(Int(SourcePipeline.stopGrace) * 3)
                for pipeline in threads { pipeline.waitUntilFinished(deadline: deadline) }
                continuation.resume()
            }
        }
    }

    /// Keeps `stopped` until their threads end; forgets the ones that have.
    private func windDown(_ stopped: [SourcePipeline]) {
        windingDown.removeAll { $0.isFinished }
        windingDown += stopped
    }

    /// Ends gracefully: stops capture, sends everything, closes the session, waits for
    /// the server's SessionClosed. Safe from any thread (signal handlers), and a no-op once
    /// ``run()`` has finished, when the caller may already have shut the event loop down.
    public func shutdown() {
        guard !hasFinished.load(ordering: .acquiring) else { return }
        eventLoop.execute { [self] in
            switch lifecycle {
            case .finished:
                return
            case .shuttingDown:
                logger.warning("second stop request: exiting without waiting for the server")
                finish()
                return
            case .running:
                lifecycle = .shuttingDown
            }
            let building = if case .building = capture { true } else { false }
            guard machine.sessionID != nil || building else {
                finish()
                return
            }
            logger.info("stopping: ending tracks and closing the session (stop again to exit at once)")
            // While devices are still being opened, the session they open is stopped at once (openSession).
            stopCapture()
            // The server may be gone for good (stopped together with this agent, host
            // shutdown): reconnecting forever would only end in the service manager's SIGKILL.
            eventLoop.scheduleTask(in: .nanoseconds(settings.stopTimeout)) { [self] in
                guard !finished else { return }
                let id = machine.sessionID.map { "\($0)" } ?? "?"
                let buffer = machine.buffer
                let unconfirmed = (buffer?.unacknowledgedCount ?? 0) + (buffer?.pendingSampleCount ?? 0)
                failure = AgentRuntimeError(
                    "stop: the server did not confirm session \(id) within \(settings.stopTimeout / 1_000_000_000) s; "
                    + "exiting with \(unconfirmed) sample(s) not acknowledged (the server may hold some of them; `recordctl recover` finishes its file)")
                finish()
            }
        }
    }

    // MARK: Connection

    /// The most bytes of media that wait in the kernel, and again in NIO, ahead of a heartbeat
    /// reply: 32 KiB is 26 ms at 10 Mbit/s, and still keeps a gigabit link busy.
    static let unsentLimit = 32 * 1024
    /// `TCP_NOTSENT_LOWAT` (linux/tcp.h): the socket takes no more once this many bytes are
    /// queued but not yet sent.
    static let tcpNotSentLowat: Int32 = 25

    private func connect() {
        connection += 1
        let id = connection
        let context = sslContext
        // Each attempt goes to the next server: after a failure or a loss, another one of the
        // fleet may hold (or take over) the session.
        let (server, position) = rotation.nextAddress()
        self.server = server
        let hostname = server.tlsHostname
        let count = rotation.addresses.count
        logger.info("connecting to \(server)\(count > 1 ? " (server \(position) of \(count))" : "")")
        ClientBootstrap(group: eventLoop)
            .connectTimeout(.seconds(10))
            .channelOption(ChannelOptions.socketOption(.so_keepalive), value: 1)
            // A heartbeat reply waits behind whatever media is queued ahead of it, and that wait
            // counts as path asymmetry in the server's clock model. So the queue is kept short:
            // the kernel holds at most `unsentLimit` bytes not yet sent, NIO at most the high
            // watermark, and the rest waits in the resend buffer, where it costs the reply nothing.
            .channelOption(ChannelOptions.Types.SocketOption(level: .tcp, name: NIOBSDSocket.Option(rawValue: Self.tcpNotSentLowat)),
                           value: Self.unsentLimit)
            .channelOption(ChannelOptions.writeBufferWaterMark, value: .init(low: Self.unsentLimit / 2, high: Self.unsentLimit))
            .channelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    let tls = try NIOSSLClientHandler(context: context, serverHostname: hostname)
                    try channel.pipeline.syncOperations.addHandler(tls)
                    try channel.pipeline.syncOperations.addHandler(MessageCodecHandler())
                    try channel.pipeline.syncOperations.addHandler(MCRPClientHandler(connection: id, delegate: self))
                }
            }
            .connect(host: server.host, port: server.port)
            .whenComplete { [self] result in
                switch result {
                case .success(let channel):
                    guard id == connection else {
                        channel.close(promise: nil)
                        return
                    }
                    self.channel = channel
                case .failure(let error):
                    guard id == connection else { return }
                    let failure = ConnectionFailure.describe(error, host: server.host, port: server.port,
                                                             certificateExpiry: settings.certificateExpiry)
                    if failure.kind == .permanent { return serverRefused(failure.message) }
                    logger.warning("cannot connect: \(failure.message)")
                    perform(machine.connectionLost(now: clock.now()))
                }
            }
    }

    func connectionActive(_ id: Int) {
        guard id == connection else { return }
        connected = true
        perform(machine.connectionEstablished(now: clock.now()))
    }

    func connectionReceived(_ message: Message, connection id: Int) {
        guard id == connection else { return }
        perform(machine.received(message, now: clock.now()))
        pump()
    }

    func connectionFailed(_ error: ProtocolError, connection id: Int) {
        guard id == connection else { return }
        perform(machine.protocolViolation(error, now: clock.now()))
    }

    func connectionWritable(connection id: Int) {
        guard id == connection else { return }
        pump()
    }

    func connectionInactive(_ id: Int) {
        guard id == connection, connected else { return }
        connected = false
        channel = nil
        if finished || (shuttingDown && machine.sessionID == nil) { return }
        if let refusal {
            self.refusal = nil
            return serverRefused(refusal)
        }
        perform(machine.connectionLost(now: clock.now()))
    }

    func connectionError(_ error: any Error, connection id: Int) {
        guard id == connection else { return }
        let failure = ConnectionFailure.describe(error, host: server.host, port: server.port,
                                                 certificateExpiry: settings.certificateExpiry)
        if failure.kind == .permanent {
            // Stop once the connection is closed (connectionInactive), not in the middle of it.
            refusal = failure.message
            channel?.close(promise: nil)
            if !connected {
                refusal = nil
                serverRefused(failure.message)
            }
            return
        }
        logger.warning("connection error: \(failure.message)")
    }

    /// A refusal retrying this server cannot fix: the next attempt goes to another server of
    /// the list (``ServerRotation``); once every one has refused, say why once and exit with a
    /// distinct status instead of reconnecting every few seconds forever.
    private func serverRefused(_ message: String) {
        guard !finished else { return }
        guard let everyServer = rotation.refuseCurrent(because: message) else {
            logger.error("\(server) refused this agent: \(message); it is left out, the other servers are tried")
            perform(machine.connectionLost(now: clock.now()))
            return
        }
        failure = AgentRuntimeError("\(everyServer); not retrying", exitCode: ConnectionFailure.permanentExitCode)
        finish()
    }

    // MARK: Actions

    private func perform(_ actions: [AgentStateMachine.Action]) {
        var wrote = false
        for action in actions {
            switch action {
            case .send(let message):
                if let channel, connected {
                    channel.write(message, promise: nil)
                    wrote = true
                }
            case .negotiated:
                break
            case .closeConnection(let reason):
                logger.info("closing the connection: \(reason)")
                if wrote { channel?.flush(); wrote = false }
                channel?.close(promise: nil)
            case .scheduleReconnect(let delay):
                guard !finished else { break }
                eventLoop.scheduleTask(in: .nanoseconds(delay)) { [self] in
                    if !connected && !finished { connect() }
                }
            case .startCapture(let labels, let at):
                startCapture(labels: labels, at: at)
            case .stopCapture(_, let at):
                stopCapture(at: at)
            case .cancelCapture:
                for pipeline in pipelines { pipeline.stop() }
            case .requestKeyframe(let track):
                pipelines.first { $0.track == track }?.requestKeyframe()
            case .sessionFinished(let closed):
                sessionEnded()
                if closed.outcome == .cancelled && settings.record && !shuttingDown {
                    failure = AgentRuntimeError("session \(closed.sessionID) was cancelled")
                }
            case .sessionFailed(let id, let report):
                failure = AgentRuntimeError("session \(id) failed: \(report.code) \(report.message)")
                sessionEnded()
            case .log(let level, let text):
                logger.log(level: level, "\(text)")
            case .refused(let report):
                refusal = ConnectionFailure.describe(refusal: report).message
            }
        }
        if wrote { flushSoon() }
    }

    /// Flushes once the tasks already queued on the event loop have run. Every flush is a TLS
    /// record and a syscall; when encoders hand over samples faster than the loop turns (many
    /// tracks, a slow CPU) the samples that arrived meanwhile share one. When the loop keeps
    /// up, each sample still goes out in the same tick it arrived.
    private func flushSoon() {
        guard !flushPending else { return }
        flushPending = true
        eventLoop.execute { [self] in
            flushPending = false
            channel?.flush()
        }
    }

    /// Pumps once the samples already queued on the event loop are in the state machine (see
    /// ``flushSoon()``): one pump and one flush for all of them.
    private func pumpSoon() {
        guard !pumpPending else { return }
        pumpPending = true
        eventLoop.execute { [self] in
            pumpPending = false
            pump()
        }
    }

    /// Sends what the state machine has, as long as the channel takes it.
    private func pump() {
        while let channel, connected, channel.isWritable {
            let actions = machine.pump(maxBytes: Self.unsentLimit, now: clock.now())
            guard !actions.isEmpty else { return }
            perform(actions)
        }
    }

    private func sessionEnded() {
        let ending = pipelines
        // A build in progress is left to finish; what it opens is decided then (openSession).
        if case .running = capture { capture = .idle }
        durationTimer?.cancel()
        for pipeline in ending { pipeline.stop() }
        windDown(ending)
        // Once a self-started recording is over (or a stop was asked for), the agent is done.
        if settings.record || shuttingDown {
            finish()
        }
    }

    private func finish() {
        guard !finished else { return }
        lifecycle = .finished
        hasFinished.store(true, ordering: .releasing)
        ticker?.cancel()
        // A forced end (a second stop, the stop timeout, a refusal) may leave capture running.
        for pipeline in pipelines { pipeline.stop() }
        windDown(pipelines)
        channel?.close(promise: nil)
        if let failure {
            done.fail(failure)
        } else {
            done.succeed(())
        }
    }

    // MARK: Capture

    /// - Parameter startAt: the server's start instant on this agent's clock (a session
    ///   across agents, protocol.md §6.16): units before it are not recorded.
    private func startCapture(labels: [Label], at startAt: Int64? = nil) {
        guard case .idle = capture, machine.sessionID == nil, !finished else {
            logger.warning("a session is already starting or running; start request ignored")
            return
        }
        capture = .building
        captureNumber += 1
        let sink = CaptureSink(runtime: self, capture: captureNumber)
        captureSink = sink
        let specs = settings.sources
        let clock = self.clock
        // With whole seconds asked for, the second after next (time enough to build the
        // pipelines), or with a start instant the whole second before it (the test sources' own
        // frames before the instant are then not recorded, so agents that share a machine
        // still flash and beep at the same instants).
        let epoch: Int64
        switch (settings.testSourcesOnWholeSeconds, startAt) {
        case (true, let startAt?): epoch = clock.time(atSystemTime: clock.systemTime(at: startAt) / 1_000_000_000 * 1_000_000_000)
        case (true, nil): epoch = clock.time(atSystemTime: (clock.systemTime(at: clock.now()) / 1_000_000_000 + 2) * 1_000_000_000)
        case (false, let startAt?): epoch = max(startAt, clock.now())
        case (false, nil): epoch = clock.now()
        }
        let video = settings.video, audio = settings.audio
        let fast = settings.fastFiles
        let logger = self.logger
        let queueVideo = settings.videoQueueFrames, queueAudio = settings.audioQueueChunks
        // Opening devices may block (V4L2 negotiation, ALSA open): not on the event loop.
        Thread.detachNewThread { [self] in
            var built: [SourcePipeline] = []
            var problem: String?
            for (index, spec) in specs.enumerated() {
                let track = UInt8(index + 1)
                let source = spec.makeSource(clock: clock, epoch: epoch, fastFiles: fast)
                do {
                    try source.start()
                    if let camera = source as? V4L2CaptureSource, let granted = camera.granted {
                        logger.info("\(spec.name): device granted \(granted)")
                    }
                    let encoder = try EncoderFactory.encoder(codec: EncoderFactory.codec(for: source.format.kind), track: track,
                                                             format: source.format, video: video, audio: audio)
                    logger.info("\(spec.name) (track \(track)): \(source.name), \(source.format)")
                    built.append(SourcePipeline(
                        track: track, label: spec.name, source: source, encoder: encoder,
                        queueCapacity: source.format.isVideo ? queueVideo : queueAudio, sink: sink, logger: logger, clock: clock,
                        startAt: startAt))
                } catch {
                    source.stop()
                    problem = "\(spec.name): \(error)"
                    break
                }
            }
            eventLoop.execute { [self, problem, built] in
                capture = .idle
                if finished {  // a second stop request while the devices opened: exit at once
                    for pipeline in built { pipeline.source.stop() }
                    return
                }
                if let error = problem {
                    logger.error("cannot start capture: \(error)")
                    for pipeline in built { pipeline.source.stop() }
                    if settings.record || shuttingDown {
                        failure = AgentRuntimeError("cannot start capture: \(error)")
                        finish()
                    } else {
                        // The server asked for this session: tell it why there is none.
                        perform(machine.captureFailed(error, now: clock.now()))
                    }
                    return
                }
                openSession(pipelines: built, labels: labels)
            }
        }
    }

    private func openSession(pipelines built: [SourcePipeline], labels: [Label]) {
        let id = settings.sessionID.flatMap { machine.sessionID == nil ? $0 : nil } ?? Self.newSessionID(agent: settings.agentID)
        var all = settings.labels
        for label in labels where !all.contains(where: { $0.key == label.key }) { all.append(label) }
        capture = .running(pipelines: built, stopping: false, endedTracks: [])
        perform(machine.openSession(id: id, labels: all, tracks: built.map(\.trackDescriptor), now: clock.now()))
        // Every device's clock starts at one moment, before any capture thread exists
        // (starting a device is one ioctl: nothing here blocks the event loop).
        for pipeline in built { pipeline.source.beginCapture() }
        for pipeline in built { pipeline.run() }
        if shuttingDown {
            stopCapture()
        } else if settings.record, let duration = settings.duration {
            durationTimer = eventLoop.scheduleTask(in: .nanoseconds(Int64(duration * 1e9))) { [self] in
                logger.info("duration of \(duration) s reached")
                stopCapture()
            }
        }
        pump()
    }

    /// - Parameter stopAt: the server's stop instant on this agent's clock (protocol.md §6.17);
    ///   nil: now.
    private func stopCapture(at stopAt: Int64? = nil) {
        switch capture {
        case .running(_, stopping: true, _):
            return
        case .running(let pipelines, stopping: false, let ended):
            capture = .running(pipelines: pipelines, stopping: true, endedTracks: ended)
            // One instant for every track: each ends there, within one unit (SourcePipeline.stop(at:)).
            let instant = max(stopAt ?? clock.now(), clock.now())
            for pipeline in pipelines { pipeline.stop(at: instant) }
        case .idle, .building:
            break
        }
        perform(machine.requestClose(now: clock.now()))
        pump()
    }

    /// `<agent>-<UTC time>-<random>`: unique per agent, readable, and a valid identifier.
    static func newSessionID(agent: Identifier) -> Identifier {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        let suffix = String(UInt32.random(in: 0 ... .max), radix: 16)
        let prefix = String(agent.value.prefix(64 - 26))
        return (try? Identifier(validating: "\(prefix)-\(formatter.string(from: Date()))-\(suffix)")) ?? Identifier(stringLiteral: "session-\(suffix)")
    }

    // MARK: Pipeline events (pipeline threads, through each capture's CaptureSink)

    /// A pipeline of capture `number` reports: acted on when that capture is the current one.
    fileprivate func fromCapture(_ number: UInt64, _ body: @escaping @Sendable () -> Void) {
        eventLoop.execute { [self] in
            guard number == captureNumber else {
                logger.debug("an event of an earlier capture's pipeline ignored")
                return
            }
            body()
        }
    }

    fileprivate func pipelineProduced(_ sample: EncodedSample) {
        perform(machine.enqueue(sample, now: clock.now()))
        pumpSoon()
    }

    fileprivate func pipelineDropped(track: UInt8, count: Int, reason: DropReport.Reason) {
        machine.recordDrop(track: track, reason: reason, count: count)
        pump()
    }

    fileprivate func pipelineEnded(track: UInt8, reason: TrackEnd.Reason, message: String) {
        do {
            if reason == .error {
                logger.error("track \(track) ended with an error: \(message)")
            } else {
                logger.info("track \(track) ended")
            }
            perform(machine.endTrack(TrackEnd(track: track, reason: reason, message: String(message.utf8.prefix(1000)) ?? ""), now: clock.now()))
            // When every source has ended on its own (files), the recording is over.
            if case .running(let pipelines, let stopping, var ended) = capture, pipelines.contains(where: { $0.track == track }) {
                ended.insert(track)
                let allEnded = ended.isSuperset(of: pipelines.map(\.track))
                capture = .running(pipelines: pipelines, stopping: stopping, endedTracks: allEnded ? [] : ended)
                if allEnded { perform(machine.requestClose(now: clock.now())) }
            }
            pump()
        }
    }
}

/// What one capture's pipelines report to: the runtime, told which capture it is.
private final class CaptureSink: PipelineSink {
    /// Weak: the runtime holds its current sink, and the pipelines hold the sink weakly.
    weak let runtime: AgentRuntime?
    let capture: UInt64

    init(runtime: AgentRuntime, capture: UInt64) {
        self.runtime = runtime
        self.capture = capture
    }

    func pipelineProduced(_ sample: EncodedSample) {
        guard let runtime else { return }
        runtime.fromCapture(capture) { runtime.pipelineProduced(sample) }
    }

    func pipelineDropped(track: UInt8, count: Int, reason: DropReport.Reason) {
        guard let runtime else { return }
        runtime.fromCapture(capture) { runtime.pipelineDropped(track: track, count: count, reason: reason) }
    }

    func pipelineEnded(track: UInt8, reason: TrackEnd.Reason, message: String) {
        guard let runtime else { return }
        runtime.fromCapture(capture) { runtime.pipelineEnded(track: track, reason: reason, message: message) }
    }
}

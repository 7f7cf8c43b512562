import Foundation
import Logging
import NIOCore
import NIOSSL
import Shared

/// Serves one agent connection: handshake, then the session's messages in order. Protocol
/// rules live in the sans-I/O `SessionValidator`; this loop only carries out what it allows.
/// Messages arrive in batches (everything one read cycle brought); the samples of a batch go
/// to the session in one call. Because the loop awaits that call before taking the next
/// batch, a session that cannot keep up stops its connection being read (NIOAsyncChannel
/// backpressure) — memory stays bounded and other sessions are unaffected.
struct AgentConnection {
    let channel: NIOAsyncChannel<InboundBatch, Message>
    /// The client certificate the transport verified, asked for when the Hello arrives; nil
    /// without TLS. Given by whoever built the pipeline (`IngestServer`), so this loop never
    /// looks for a TLS handler: TLS stays a decorator around the protocol.
    let peerCertificate: @Sendable () async -> NIOSSLCertificate?
    let registry: SessionRegistry
    let authenticator: AgentAuthenticator
    let metrics: any IngestMetrics
    let limits: ProtocolLimits
    let serverID: Identifier
    let idleTimeout: Duration
    let logger: Logger

    private enum Outcome: Error { case closeConnection }

    func run() async {
        metrics.connectionOpened()
        defer { metrics.connectionClosed() }
        let connection = await registry.newConnectionID()
        let address = channel.channel.remoteAddress.map(Self.display) ?? "unknown"
        var logger = logger
        logger[metadataKey: "peer"] = "\(address)"
        var state = ConnectionState()
        do {
            try await channel.executeThenClose { inbound, outbound in
                defer { state.heartbeats?.cancel() }
                var pending: [Sample] = []
                do {
                    for try await batch in inbound {
                        for message in batch.messages {
                            do {
                                // Samples of the open session are validated here and handed to
                                // the session together, one call per read cycle.
                                if case .sample(let sample) = message, state.session != nil {
                                    if try state.validator.validate(message) == .accept { pending.append(sample) }
                                    continue
                                }
                                try await deliver(&pending, state: &state, outbound: outbound, logger: logger)
                                if message.isHeartbeat {
                                    // On this thread: a hop first would delay the agent's heartbeat's reply (the
                                    // agent's own clock exchange); the server's exchanges use the batch's read time.
                                    try await handle(message, readAt: batch.readAt, state: &state, connection: connection, address: address,
                                                     outbound: outbound, logger: &logger)
                                } else {
                                    try await onStorageThreads {
                                        try await handle(message, readAt: batch.readAt, state: &state, connection: connection, address: address,
                                                         outbound: outbound, logger: &logger)
                                    }
                                }
                            } catch let error as ProtocolError {
                                try await deliver(&pending, state: &state, outbound: outbound, logger: logger)
                                try await onStorageThreads { try await report(error, state: &state, outbound: outbound, logger: logger) }
                            }
                        }
                        try await deliver(&pending, state: &state, outbound: outbound, logger: logger)
                    }
                } catch let error as ProtocolError {
                    // Malformed input found by the parser, or an idle timeout: connection-fatal.
                    // What arrived intact before it still counts.
                    try? await deliver(&pending, state: &state, outbound: outbound, logger: logger)
                    // The error goes to an agent whose connection is ending; a failed write means it
                    // is gone already, and its session is detached below either way.
                    try? await onStorageThreads { try await report(error, state: &state, outbound: outbound, logger: logger) }
                } catch Outcome.closeConnection {
                    // Already reported.
                } catch let error as NIOSSLError {
                    metrics.connectionRefused(reason: "tls")
                    logger.notice("TLS failure", metadata: ["error": "\(error)"])
                }
            }
        } catch {
            logger.debug("connection ended", metadata: ["error": "\(error)"])
        }
        if let session = state.session {
            let ended = await onStorageThreads { await session.detach(connection: connection, now: registry.clock.now) }
            if ended { await registry.sessionEnded(session) }
        }
        if let agent = state.agentID { await registry.agentDisconnected(agent, connection: connection) }
    }

    struct ConnectionState {
        var validator = SessionValidator()
        var agentID: String?
        /// What this server and the agent negotiated (HelloReply).
        var capabilities: Capabilities = []
        var session: RecordingSession?
        /// This agent's part (lane) of `session`: 0, unless the session is across agents.
        var lane: UInt16 = 0
        /// The server's own heartbeats, from the handshake on: its clock probes.
        var heartbeats: Task<Void, Never>?
        /// The agent's clock against the server's, from the replies to those heartbeats.
        var clock = ClockEstimator()
        /// A resume of a part of a session across agents, answered once the first clock
        /// exchange on this connection is in (its samples are mapped through the estimate).
        var resumeWaitingForClock: SessionResume?
    }

    /// - Parameter readAt: when the read that brought `message` happened (server monotonic ns).
    private func handle(_ message: Message, readAt: Int64, state: inout ConnectionState, connection: UInt64, address: String,
                        outbound: NIOAsyncChannelOutboundWriter<Message>, logger: inout Logger) async throws {
        let action = try state.validator.validate(message)
        switch message {
        case .hello(let hello):
            let agent = try authenticator.authenticate(hello, peerCertificate: await peerCertificate())
            guard !(await registry.isShuttingDown) else { throw ProtocolError(.shuttingDown, "the server is shutting down") }
            state.agentID = agent
            if let history = await registry.clockHistory(of: agent) { state.clock = history }
            logger[metadataKey: "agent"] = "\(agent)"
            // From now on the peer may send frames up to the full limit (MessageBatchDecoderHandler).
            channel.channel.triggerUserOutboundEvent(MessageBatchDecoderHandler.Authenticated(), promise: nil)
            state.capabilities = hello.capabilities.intersection(registry.offeredCapabilities)
            try await outbound.write(.helloReply(HelloReply(
                version: state.validator.negotiatedVersion ?? ProtocolVersion.current,
                capabilities: state.capabilities, serverID: serverID,
                softwareVersion: "record-server \(ServerVersion.current)", limits: limits.announced,
                heartbeatIntervalMillis: Self.heartbeatInterval.wireMilliseconds, idleTimeoutMillis: idleTimeout.wireMilliseconds,
                resumeWindowMillis: await registry.resumeWindow.wireMilliseconds)))
            let nioChannel = channel.channel
            await registry.agentConnected(.init(
                connection: connection,
                info: ConnectedAgentInfo(id: agent, address: address, softwareVersion: hello.softwareVersion, connectedAt: Date(), lastSeen: Date()),
                capabilities: state.capabilities,
                // Through the channel, not the async writer: commands and RemoteAcks come from
                // other tasks, which may run after this connection's writer is gone (writing
                // to it then crashes); a write to a closed channel just fails, and is ignored:
                // the agent is gone, and what it was told is re-established when it resumes.
                send: { message in try? await nioChannel.writeAndFlush(message) }))
            logger.info("agent connected", metadata: ["version": "\(hello.softwareVersion)"])
            // The server's own heartbeats (protocol.md §6.3) are the clock model's probes, measure
            // the round trip and let the agent notice a silent server.
            state.heartbeats = Task { await sendClockProbes(outbound) }

        case .sessionOpen(let open):
            do {
                (state.session, state.lane) = try await registry.openSession(open, agentID: state.agentID ?? "", connection: connection)
            } catch {
                state.validator.sessionEnded()
                throw error
            }
            await registry.agentSeen(state.agentID ?? "", connection: connection, roundTripMillis: nil, sessionID: open.sessionID.value)
            try await outbound.write(.sessionAccepted(SessionAccepted(sessionID: open.sessionID, acknowledged: 0)))
            startBatchingReads()

        case .sessionResume(let resume):
            guard case .resumeRequested = action else { return }
            if !state.clock.isConfirmed, await registry.resumeNeedsClock(resume.sessionID) {
                state.resumeWaitingForClock = resume
                return
            }
            try await takeResume(resume, state: &state, connection: connection, outbound: outbound, logger: logger)
        case .sample(let sample):
            // Only reached without an open session (the run loop batches the others).
            guard action == .accept, state.session != nil else { return }
            var one = [sample]
            try await deliver(&one, state: &state, outbound: outbound, logger: logger)

        case .trackEnd(let end):
            guard action == .accept, let session = state.session else { return }
            if let ack = try await session.endTrack(end, lane: state.lane) { try await sendAck(ack, session: session, lane: state.lane, outbound: outbound) }

        case .dropReport(let report):
            await state.session?.recordDrops(report, lane: state.lane)

        case .sessionClose(let close):
            guard let session = state.session else { return }
            state.session = nil
            let durable: UInt64
            do { durable = try await session.close(lane: state.lane) } catch {
                // Finalizing failed (storage): the session is over all the same; say what is kept.
                try await endSession(session, state: state, after: error, outbound: outbound)
                return
            }
            if await session.isFinished { await registry.sessionEnded(session) }
            do {
                try await sendAck(durable, session: session, lane: state.lane, outbound: outbound)
                try await answerRemotely(durable, session: session, state: state, outbound: outbound)
                try await outbound.write(.sessionClosed(SessionClosed(sessionID: close.sessionID, outcome: .finalized, durableSequence: durable)))
            } catch {
                await session.reconcileCatalog()
                throw error
            }
            await session.reconcileCatalog()

        case .sessionCancel(let cancel):
            guard let session = state.session else { return }
            state.session = nil
            await session.cancel(reason: cancel.reason)
            await registry.sessionEnded(session)
            try await outbound.write(.sessionClosed(SessionClosed(sessionID: cancel.sessionID, outcome: .cancelled, durableSequence: 0)))

        case .heartbeat(let heartbeat):
            try await outbound.write(.heartbeatReply(HeartbeatReply(answering: heartbeat, receiveTime: readAt, transmitTime: monotonicNanoseconds())))
            await registry.agentSeen(state.agentID ?? "", connection: connection, roundTripMillis: nil, sessionID: state.session?.id.value)

        case .heartbeatReply(let reply):
            // The reply is in: the connection's reads may wait again (ReadBatchingHandler).
            channel.channel.triggerUserOutboundEvent(ReadBatchingHandler.PromptReads(until: nil), promise: nil)
            let exchange = ClockExchange(serverSent: reply.originTime, agentReceived: reply.receiveTime, agentSent: reply.transmitTime,
                                         serverReceived: readAt)
            state.clock.add(exchange)
            await registry.agentSeen(state.agentID ?? "", connection: connection, roundTripMillis: max(Double(exchange.roundTrip) / 1e6, 0),
                                     history: state.clock, sessionID: state.session?.id.value)
            if let resume = state.resumeWaitingForClock, state.clock.isConfirmed {
                state.resumeWaitingForClock = nil
                try await onStorageThreads { try await takeResume(resume, state: &state, connection: connection, outbound: outbound, logger: logger) }
            }

        case .error(let report):
            logger.warning("agent reported an error", metadata: ["code": "\(report.code)", "scope": "\(report.scope)", "message": "\(report.message)"])
            if report.scope == .connection { throw Outcome.closeConnection }
            // A refused StartSession (protocol.md §6.16) answers the operator who asked for it.
            if report.code.refusesCommandOnly {
                await registry.startRefused(by: state.agentID ?? "", connection: connection, report: report)
            }
            // The agent ends its session (protocol.md §6.5): finalized with what is durable.
            // Except its refusal of a StartSession, which is about the command, not the
            // session that goes on.
            if !report.code.refusesCommandOnly, let session = state.session {
                state.session = nil
                try await endSession(session, state: state, after: ProtocolError(report.code, scope: .session, "the agent reported: \(report.message)"),
                                     outbound: outbound, reportError: false)
            }

        default:
            break
        }
    }

    /// Re-attaches the session the agent resumes (or repeats the `SessionClosed` of one that
    /// finished meanwhile) and answers it.
    private func takeResume(_ resume: SessionResume, state: inout ConnectionState, connection: UInt64,
                            outbound: NIOAsyncChannelOutboundWriter<Message>, logger: Logger) async throws {
        let outcome: SessionRegistry.ResumeOutcome
        do {
            outcome = try await registry.resumeSession(resume.sessionID, agentID: state.agentID ?? "", connection: connection,
                                                       clock: state.clock.estimate)
        } catch {
            state.validator.resumeRejected()
            throw error
        }
        switch outcome {
        case .resumed(let session, let lane, let point):
            state.validator.resumeAccepted(point)
            state.session = session
            state.lane = lane
            await registry.agentSeen(state.agentID ?? "", connection: connection, roundTripMillis: nil, sessionID: resume.sessionID.value)
            try await outbound.write(.sessionAccepted(SessionAccepted(sessionID: resume.sessionID, acknowledged: point.acknowledged)))
            startBatchingReads()
        case .alreadyClosed(let closed):
            // It finished before the agent heard so (its SessionClosed was lost): say it again.
            state.validator.resumeRejected()
            logger.notice("resume of a finished session; repeating its SessionClosed", metadata: [
                "session": "\(closed.sessionID)", "outcome": "\(closed.outcome)", "durable": "\(closed.durableSequence)"])
            try await outbound.write(.sessionClosed(closed))
        }
    }

    /// Hands the validated samples to the session in one call. A sample the session refuses is
    /// reported like any protocol error; if the session lives on, the samples after it follow
    /// (they were validated already); if it ended, they are dropped, as the validator would
    /// have ignored them once the session had ended.
    private func deliver(_ pending: inout [Sample], state: inout ConnectionState,
                         outbound: NIOAsyncChannelOutboundWriter<Message>, logger: Logger) async throws {
        defer { pending.removeAll(keepingCapacity: true) }
        var start = pending.startIndex
        while start < pending.endIndex, let session = state.session {
            let lane = state.lane
            var outcome = await session.append(pending[start...], lane: lane)
            if outcome.syncDue {
                // The fragments just written are fsynced on a storage thread: this loop reads
                // other agents' sockets too. Their ack waits for it; the other agents do not.
                switch await onStorageThreads({ await session.syncWritten(lane: lane) }) {
                case .success(let ack): outcome.acknowledged = ack ?? outcome.acknowledged
                case .failure(let error): outcome.failure = outcome.failure ?? (pending.endIndex - 1, error)
                }
            }
            if let ack = outcome.acknowledged { try await sendAck(ack, session: session, lane: lane, outbound: outbound) }
            guard let failure = outcome.failure else { return }
            try await onStorageThreads { try await report(failure.error, state: &state, outbound: outbound, logger: logger) }
            start = failure.index + 1
        }
    }

    /// Runs `body` with its session and registry work on the storage threads instead of this
    /// connection's event loop (``StorageTaskExecutor``): what may block on the disk or the
    /// database must not stall the other agents read on the same loop.
    private func onStorageThreads<T, Failure: Error>(_ body: () async throws(Failure) -> T) async throws(Failure) -> T {
        try await withTaskExecutorPreference(StorageTaskExecutor.shared, operation: body)
    }

    /// With `remoteAcks` negotiated, a `SessionClosed` says the samples it names are in object
    /// storage (protocol.md §6.13a): waits until the live shipping has them, then says so with
    /// the `RemoteAck` that precedes it.
    private func answerRemotely(_ durable: UInt64, session: RecordingSession, state: ConnectionState,
                                outbound: NIOAsyncChannelOutboundWriter<Message>) async throws {
        guard state.capabilities.contains(.remoteAcks), durable > 0,
              await session.waitUntilShipped(through: durable, lane: state.lane) else { return }
        try await outbound.write(.remoteAck(Ack(sessionID: session.wireID(lane: state.lane), sequence: durable)))
    }

    private func sendAck(_ sequence: UInt64, session: RecordingSession, lane: UInt16, outbound: NIOAsyncChannelOutboundWriter<Message>) async throws {
        try await outbound.write(.ack(Ack(sessionID: session.wireID(lane: lane), sequence: sequence)))
        metrics.ackSent()
    }

    /// Sends the error to the agent. Session scope ends the open session (protocol.md §8):
    /// it is finalized with what was durable (or discarded if it never had a sample), its
    /// slot and files are released, and `SessionClosed` tells the agent the durable point;
    /// the connection stays. Connection scope closes the connection, and the session waits
    /// for a resume as after any disconnect.
    private func report(_ error: ProtocolError, state: inout ConnectionState, outbound: NIOAsyncChannelOutboundWriter<Message>, logger: Logger) async throws {
        metrics.error(code: error.code)
        logger.log(level: error.code == .authenticationFailed ? .notice : .warning, "protocol error", metadata: [
            "code": "\(error.code)", "scope": "\(error.scope)", "message": "\(error.message)"])
        if error.code == .authenticationFailed { metrics.connectionRefused(reason: "authentication") }
        guard error.scope == .session, let session = state.session else {
            try? await outbound.write(.error(ErrorReport(error, maxBytes: limits.maxStringBytes)))
            if error.scope == .connection { throw Outcome.closeConnection }
            state.validator.sessionEnded()
            return
        }
        state.session = nil
        state.validator.sessionEnded()
        try await endSession(session, state: state, after: error, outbound: outbound)
    }

    /// Ends `session` (across agents: this agent's part, `lane`) after a session-scoped error
    /// and tells the agent: the Error (unless the agent raised it), the final Ack, then
    /// `SessionClosed` with the durable point (0 when nothing was kept).
    private func endSession(_ session: RecordingSession, state: ConnectionState, after error: ProtocolError, outbound: NIOAsyncChannelOutboundWriter<Message>,
                            reportError: Bool = true) async throws {
        let lane = state.lane
        let durable = await session.end(after: error, lane: lane)
        await registry.sessionEnded(session)
        // A failed write means the connection is gone; the session is ended all the same.
        if reportError { try? await outbound.write(.error(ErrorReport(error, maxBytes: limits.maxStringBytes))) }
        do {
            if durable > 0 { try await sendAck(durable, session: session, lane: lane, outbound: outbound) }
            try await answerRemotely(durable, session: session, state: state, outbound: outbound)
            try await outbound.write(.sessionClosed(SessionClosed(sessionID: session.wireID(lane: lane), outcome: .finalized, durableSequence: durable)))
        } catch {
            await session.reconcileCatalog()
            throw error
        }
        await session.reconcileCatalog()
    }

    /// Sends a Heartbeat every ``clockProbeInterval`` until the connection ends: the agent's
    /// replies feed the clock model and give the round trip shown by the admin API. Until a
    /// reply is in (at most ``clockProbeTimeout``) the connection is read as soon as bytes
    /// land, so the reply's arrival time is when it arrived, not when a batched read got to it.
    private func sendClockProbes(_ outbound: NIOAsyncChannelOutboundWriter<Message>) async {
        var nonce: UInt64 = 0
        var first = true
        while !Task.isCancelled {
            // The first at once: an agent resuming its part of a session across agents waits for it.
            if !first { do { try await Task.sleep(for: Self.clockProbeInterval) } catch { return } }
            first = false
            nonce += 1
            channel.channel.triggerUserOutboundEvent(ReadBatchingHandler.PromptReads(until: .now() + TimeAmount(Self.clockProbeTimeout)), promise: nil)
            do { try await outbound.write(.heartbeat(Heartbeat(nonce: nonce, originTime: monotonicNanoseconds()))) } catch { return }
        }
    }

    /// Announced in HelloReply: how long an agent may stay silent before it sends a heartbeat.
    static let heartbeatInterval = Duration.seconds(5)
    /// How often the server probes an agent's clock (a Heartbeat; protocol.md §7.4 lets the
    /// server send them more often than `heartbeatIntervalMillis`). One a second gives the
    /// clock model 60 exchanges in the first minute (docs/architecture.md, "Clock model").
    static let clockProbeInterval = Duration.seconds(1)
    /// The longest a probe keeps the connection's reads prompt when no reply comes.
    static let clockProbeTimeout = Duration.seconds(2)

    /// A session is streaming: let its samples collect briefly between reads (ReadBatchingHandler).
    private func startBatchingReads() {
        channel.channel.triggerUserOutboundEvent(ReadBatchingHandler.Start(), promise: nil)
    }

    /// `192.0.2.7:45352` or `[2001:db8::7]:45352`, as an operator writes an address (NIO's
    /// description is a debug string: `[IPv4]192.0.2.7/192.0.2.7:45352`).
    static func display(_ address: SocketAddress) -> String {
        guard let ip = address.ipAddress, let port = address.port else { return "\(address)" }
        if case .v6 = address { return "[\(ip)]:\(port)" }
        return "\(ip):\(port)"
    }
}

private extension Message {
    var isHeartbeat: Bool {
        switch self {
        case .heartbeat, .heartbeatReply: true
        default: false
        }
    }
}

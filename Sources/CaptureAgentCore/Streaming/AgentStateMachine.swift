public import Logging
public import WireProtocol

/// The agent's protocol logic (protocol.md §5–§7), without any I/O.
///
/// The runtime feeds it events — connection up/down, decoded server messages, encoded
/// samples, drops, track ends, timer ticks, operator requests — each with the current
/// monotonic time, and carries out the returned ``Action``s. Everything it decides is
/// therefore testable by feeding messages and reading actions.
///
/// Link: `disconnected → awaitingHelloReply → established`, back to `disconnected` on
/// any loss (then a reconnect is scheduled with ``ReconnectBackoff``).
/// Session (kept across links): `needsAttach → opening | resuming → open → closing |
/// cancelling → (SessionClosed) gone`. A session that was ever announced to a server is
/// resumed, never reopened, so sequence numbers continue and nothing is recorded twice.
public struct AgentStateMachine: Sendable {
    public struct Configuration: Sendable {
        public var agentID: Identifier
        public var softwareVersion: String
        public var bearerToken: String?
        public var capabilities: Capabilities
        public var bufferLimits: ResendBuffer.Limits
        public var backoff: ReconnectBackoff
        /// Used until the server announces its own (protocol.md §7.4).
        var defaultHeartbeatInterval: Int64
        var defaultIdleTimeout: Int64

        public init(agentID: Identifier, softwareVersion: String = "capture-agent/1.0", bearerToken: String? = nil,
                    capabilities: Capabilities = .all, bufferLimits: ResendBuffer.Limits = .init(),
                    backoff: ReconnectBackoff = .init(), defaultHeartbeatInterval: Int64 = 5_000_000_000,
                    defaultIdleTimeout: Int64 = 20_000_000_000) {
            self.agentID = agentID
            self.softwareVersion = softwareVersion
            self.bearerToken = bearerToken
            self.capabilities = capabilities
            self.bufferLimits = bufferLimits
            self.backoff = backoff
            self.defaultHeartbeatInterval = defaultHeartbeatInterval
            self.defaultIdleTimeout = defaultIdleTimeout
        }
    }

    /// What the runtime must do.
    public enum Action: Sendable, Equatable {
        /// Write this message.
        case send(Message)
        /// The handshake succeeded: use this version and these limits for framing.
        case negotiated(HelloReply)
        /// Close the connection (then report ``connectionLost(now:)``).
        case closeConnection(reason: String)
        /// Call ``connectionEstablished(now:)`` after connecting again in this many ns.
        case scheduleReconnect(afterNanoseconds: Int64)
        /// The server asked for a recording: build the capture pipelines, then call
        /// ``openSession(id:labels:tracks:now:)``.
        /// `at`: when capture starts, on the agent's clock (nil: at once).
        case startCapture(labels: [Label], at: Int64?)
        /// Stop the sources of the session gracefully; their tracks end, then the session closes.
        /// `at`: when capture stops, on the agent's clock (nil: at once).
        case stopCapture(SessionID, at: Int64?)
        /// Stop the sources at once, discarding what they hold.
        case cancelCapture(SessionID)
        /// Make the encoder of this video track produce a keyframe.
        case requestKeyframe(track: UInt8)
        /// The server finalized or discarded the session; everything about it is freed.
        case sessionFinished(SessionClosed)
        /// The server ended the session with an error; capture for it must stop.
        case sessionFailed(SessionID, ErrorReport)
        /// Something worth a log line.
        case log(Logger.Level, String)
        /// The server refused this agent for a reason retrying cannot fix (authentication,
        /// no common version): stop instead of reconnecting.
        case refused(ErrorReport)
    }

    private enum Link: Sendable {
        case disconnected
        case awaitingHelloReply
        case established(HelloReply)
    }

    private enum Phase: Sendable, Equatable {
        /// The current link does not know the session yet.
        case needsAttach
        case opening
        case resuming
        case open
        case closing
        case cancelling
    }

    private struct Session: Sendable {
        var id: SessionID
        var labels: [Label]
        var tracks: [TrackDescriptor]
        var buffer: ResendBuffer
        var phase: Phase = .needsAttach
        /// A SessionOpen went out once: from now on the session is resumed, not reopened.
        var announced = false
        var closeRequested = false
        var cancelReason: String?
        var endedTracks: Set<UInt8> = []
    }

    public let configuration: Configuration
    private var link: Link = .disconnected
    private var session: Session?
    private var backoff: ReconnectBackoff
    private var random: any RandomNumberGenerator & Sendable
    private var lastSent: Int64 = 0
    private var lastReceived: Int64 = 0
    private var nextNonce: UInt64 = 1

    /// Last heartbeat measurement (protocol.md §6.4): round trip and how far the
    /// server's clock is ahead of ours, nanoseconds.
    /// Samples the server refused to store (`sampleRefused`, protocol.md §6.12): each ended
    /// its session before it.
    private(set) var samplesRefused = 0
    /// The session the server ended with a session-scoped error; its `SessionClosed` follows.
    private var endedByServer: SessionID?
    private(set) var lastRoundTrip: Int64?
    private(set) var lastClockOffset: Int64?

    public init(configuration: Configuration, random: any RandomNumberGenerator & Sendable) {
        self.configuration = configuration
        self.backoff = configuration.backoff
        self.random = random
    }

    // MARK: Introspection (logs, tests)

    public var isEstablished: Bool {
        if case .established = link { return true }
        return false
    }

    public var sessionID: SessionID? { session?.id }
    /// The session is accepted by the server on the current connection and samples flow.
    public var isSessionOpen: Bool { session?.phase == .open }
    public var buffer: ResendBuffer? { session?.buffer }

    // MARK: Link events

    /// TCP (and TLS) is up: say Hello (protocol.md §6.1). Nothing else may be sent until
    /// HelloReply arrives.
    public mutating func connectionEstablished(now: Int64) -> [Action] {
        link = .awaitingHelloReply
        lastReceived = now
        if session != nil { session!.phase = .needsAttach }
        let hello = Hello(capabilities: configuration.capabilities, agentID: configuration.agentID,
                          softwareVersion: configuration.softwareVersion, bearerToken: configuration.bearerToken)
        return [send(.hello(hello), now)]
    }

    /// The connection is gone (closed by either side, or failed to connect).
    public mutating func connectionLost(now: Int64) -> [Action] {
        link = .disconnected
        if session != nil { session!.phase = .needsAttach }
        let delay = backoff.nextDelay(using: &random)
        var actions: [Action] = [.scheduleReconnect(afterNanoseconds: delay)]
        if let s = session {
            actions.append(.log(.warning, "connection lost; session \(s.id) keeps \(s.buffer.unacknowledgedCount) unacknowledged and \(s.buffer.pendingSampleCount) unsent samples; reconnecting in \(delay / 1_000_000) ms"))
        } else {
            actions.append(.log(.info, "connection lost; reconnecting in \(delay / 1_000_000) ms"))
        }
        return actions
    }

    /// A decoding error on our side: tell the server and close (protocol.md §8).
    mutating func protocolViolation(_ error: ProtocolError, now: Int64) -> [Action] {
        var actions: [Action] = [.log(.error, "protocol error from server: \(error)")]
        actions.append(send(.error(ErrorReport(error)), now))
        actions.append(.closeConnection(reason: "\(error)"))
        return actions
    }

    // MARK: Received messages

    public mutating func received(_ message: Message, now: Int64) -> [Action] {
        lastReceived = now
        switch link {
        case .disconnected:
            return []
        case .awaitingHelloReply:
            return receivedDuringHandshake(message, now: now)
        case .established:
            return receivedEstablished(message, now: now)
        }
    }

    private mutating func receivedDuringHandshake(_ message: Message, now: Int64) -> [Action] {
        switch message {
        case .helloReply(let reply):
            guard ProtocolVersion.supported.contains(reply.version) else {
                return protocolViolation(ProtocolError(.noCommonVersion, "server chose version \(reply.version)"), now: now)
            }
            link = .established(reply)
            backoff.reset()
            var actions: [Action] = [
                .negotiated(reply),
                .log(.info, "connected to \(reply.serverID) (\(reply.softwareVersion)), protocol \(reply.version)"),
            ]
            actions += attachSession(now: now)
            return actions
        case .error(let report):
            var actions: [Action] = [.log(.error, "server refused the connection: \(report.code) \(report.message)")]
            if ConnectionFailure.describe(refusal: report).kind == .permanent { actions.append(.refused(report)) }
            return actions + [.closeConnection(reason: "\(report.code)")]
        default:
            return protocolViolation(ProtocolError(.unexpectedMessage, "\(message.type) before HelloReply"), now: now)
        }
    }

    private mutating func receivedEstablished(_ message: Message, now: Int64) -> [Action] {
        switch message {
        case .heartbeat(let hb):
            return [send(.heartbeatReply(HeartbeatReply(answering: hb, receiveTime: now, transmitTime: now)), now)]
        case .heartbeatReply(let reply):
            let rtt = reply.roundTripTime(arrivalTime: now)
            let offset = reply.clockOffset(arrivalTime: now)
            lastRoundTrip = rtt
            lastClockOffset = offset
            return [.log(.debug, "heartbeat: round trip \(rtt / 1000) µs, server clock offset \(offset / 1000) µs")]
        case .error(let report):
            return receivedError(report, now: now)
        case .sessionAccepted(let accepted):
            return sessionAccepted(accepted, now: now)
        case .ack(let ack):
            guard session?.id == ack.sessionID else { return [.log(.debug, "ack for another session \(ack.sessionID)")] }
            // In place: a copy of the session would copy its resend log (see `pump`).
            session!.buffer.acknowledge(ack.sequence, hostAckEffect)
            // At trace level so that an operator (or a fault test) can see exactly what the
            // server has promised is durable; one line per fragment, about one a second.
            return [.log(.trace, "session \(ack.sessionID) acknowledged through sequence \(ack.sequence)")]
        case .remoteAck(let ack):
            // §5: a feature the agent's side did not see negotiated is not to be used.
            guard hostAckEffect == .keep else {
                return protocolViolation(ProtocolError(.unexpectedMessage, "RemoteAck without the remoteAcks capability"), now: now)
            }
            guard session?.id == ack.sessionID else { return [.log(.debug, "remote ack for another session \(ack.sessionID)")] }
            // Durable beyond the server's host: free (in place, as above). One above the Ack
            // point counts as that Ack too (an Ack may be coalesced away, never contradicted).
            session!.buffer.acknowledge(ack.sequence, .free)
            return [.log(.trace, "session \(ack.sessionID) durable in object storage through sequence \(ack.sequence); freed")]
        case .sessionClosed(let closed):
            if endedByServer == closed.sessionID, session?.id != closed.sessionID {
                endedByServer = nil
                return [.log(.notice, "server closed session \(closed.sessionID) after its error: samples 1...\(closed.durableSequence) are stored, none after")]
            }
            guard let s = session, s.id == closed.sessionID else {
                return [.log(.warning, "SessionClosed for unknown session \(closed.sessionID)")]
            }
            session = nil
            let what = closed.outcome == .finalized ? "finalized through sequence \(closed.durableSequence)" : "cancelled"
            // A session the server finished without us (it expired while we were away, or our
            // resume found it finished) may hold less than we sent: say what is not stored.
            let last = s.buffer.lastSequence
            if closed.outcome == .finalized, last > closed.durableSequence {
                return [.log(.error, "session \(s.id) \(what): samples \(closed.durableSequence + 1)...\(last) were not stored"),
                        .sessionFinished(closed)]
            }
            return [.log(.info, "session \(s.id) \(what)"), .sessionFinished(closed)]
        case .startSession(let command):
            if let s = session {
                let report = ErrorReport(code: .sessionAlreadyOpen, scope: .session, message: "session \(s.id) is still recording")
                return [send(.error(report), now), .log(.warning, "server asked for a new session while \(s.id) records; refused")]
            }
            let when = command.startAt.map { " at \($0) ns (in \(Double($0 - now) / 1e6) ms)" } ?? ""
            return [.startCapture(labels: command.labels, at: command.startAt), .log(.info, "server asked to start recording\(when)")]
        case .stopSession(let command):
            guard var s = session, s.id == command.sessionID else {
                return [.log(.warning, "server asked to stop \(command.sessionID), which is not recording here")]
            }
            if s.closeRequested { return [] }
            s.closeRequested = true
            session = s
            let when = command.stopAt.map { " at \($0) ns (in \(Double($0 - now) / 1e6) ms)" } ?? ""
            return [.stopCapture(s.id, at: command.stopAt), .log(.info, "server asked to stop session \(s.id)\(when)")]
        case .cancelSession(let command):
            guard session?.id == command.sessionID else {
                return [.log(.warning, "server asked to cancel \(command.sessionID), which is not recording here")]
            }
            return cancel(reason: command.reason, now: now)
        default:
            return protocolViolation(ProtocolError(.unexpectedMessage, "\(message.type) is not sent by a server"), now: now)
        }
    }

    private mutating func sessionAccepted(_ accepted: SessionAccepted, now: Int64) -> [Action] {
        guard var s = session, s.id == accepted.sessionID, s.phase == .opening || s.phase == .resuming else {
            return protocolViolation(ProtocolError(.unexpectedMessage, "SessionAccepted for \(accepted.sessionID) was not asked for"), now: now)
        }
        let before = s.buffer.acknowledged
        let outcome = s.buffer.resume(from: accepted.acknowledged, hostAckEffect)
        let resumed = s.phase == .resuming
        s.phase = .open
        var actions: [Action] = []
        if resumed {
            actions.append(resumeLog(s, serverHas: accepted.acknowledged, lastAck: before, outcome))
        } else {
            actions.append(.log(.info, "session \(s.id) accepted"))
        }
        if let reason = s.cancelReason {
            s.phase = .cancelling
            session = s
            actions.append(send(.sessionCancel(SessionCancel(sessionID: s.id, reason: reason)), now))
            return actions
        }
        session = s
        return actions
    }

    /// What a resume found, for the operator. A point below the last Ack is data loss only when
    /// the samples after it were freed already; with `remoteAcks` they are held until their
    /// RemoteAck, so a server that took the session over from a lost host may name a lower point
    /// (protocol.md §6.13a) and nothing is missing.
    private func resumeLog(_ s: Session, serverHas point: UInt64, lastAck: UInt64, _ outcome: ResendBuffer.ResumeOutcome) -> Action {
        let resending = s.buffer.lastSequence - min(point, s.buffer.lastSequence)
        switch outcome {
        case .gap(let missing):
            return .log(.error, "session \(s.id) resumed: server has 1...\(point), below the last acknowledgement (\(lastAck)); "
                        + "samples \(missing.lowerBound)...\(missing.upperBound) were freed here and are lost: the session ends at the gap")
        case .resending where point < lastAck:
            return .log(.info, "session \(s.id) resumed: server has 1...\(point), below the last Ack (\(lastAck)), as after another "
                        + "server took the session over; nothing is lost (freed only through \(s.buffer.freedThrough), the last RemoteAck); "
                        + "resending \(resending) samples")
        case .resending:
            return .log(.info, "session \(s.id) resumed: server has 1...\(point) (we had an ack for \(lastAck)); resending \(resending) samples")
        }
    }

    private mutating func receivedError(_ report: ErrorReport, now: Int64) -> [Action] {
        if report.scope == .connection {
            return [.log(.error, "server closes the connection: \(report.code) \(report.message)"),
                    .closeConnection(reason: "\(report.code)")]
        }
        guard var s = session else {
            return [.log(.warning, "server error (no session): \(report.code) \(report.message)")]
        }
        // A resume the server does not know, for a session it never acknowledged
        // anything of: it never created it (the SessionOpen was lost with the link), so open it.
        if s.phase == .resuming, report.code == .unknownSession, s.buffer.acknowledged == 0 {
            s.phase = .opening
            session = s
            return [.log(.warning, "server does not know session \(s.id); opening it again"),
                    send(.sessionOpen(SessionOpen(sessionID: s.id, labels: s.labels, tracks: s.tracks)), now)]
        }
        // The server still holds the session on the connection this agent left (it has not
        // yet seen that connection close: a server too busy to notice, a half-open link), or,
        // in a fleet, another server's lease on it still runs (§6.13a). Nothing is lost: keep
        // every sample, leave, and resume again after the reconnect backoff (on the next
        // server of the list, if several), until the session is free (protocol.md §2, §6.7).
        if s.phase == .resuming, report.code == .sessionBusy {
            return [.log(.warning, "session \(s.id) is still held on a previous connection or by another server (\(report.message)); "
                         + "resuming again after a reconnect"),
                    .closeConnection(reason: "session \(s.id) still attached to the previous connection")]
        }
        session = nil
        endedByServer = s.id
        let lost = s.buffer.lastSequence - s.buffer.acknowledged
        var text = "server ended session \(s.id): \(report.code) \(report.message); \(lost) unacknowledged samples cannot be delivered"
        if report.code == .sampleRefused {
            // The ack point never passes a refused sample (protocol.md §6.13): what is stored
            // is exactly 1…acknowledged, and the operator reads that here.
            samplesRefused += 1
            text = "server refused a sample of session \(s.id) and ended it (\(report.message)): samples 1…\(s.buffer.acknowledged) "
                + "are stored, the \(lost) after them are not; \(samplesRefused) refused sample(s) since the agent started"
        }
        return [
            .log(.error, text),
            .sessionFailed(s.id, report),
            .cancelCapture(s.id),
        ]
    }

    // MARK: Session control (operator / runtime)

    /// Starts a session with these tracks. Samples may be enqueued at once; they are sent
    /// once the server accepted the session.
    public mutating func openSession(id: SessionID, labels: [Label], tracks: [TrackDescriptor], now: Int64) -> [Action] {
        guard session == nil else { return [.log(.error, "cannot open \(id): session \(session!.id) is still active")] }
        let video = Set(tracks.filter { $0.kind == .video }.map(\.id))
        session = Session(id: id, labels: labels, tracks: tracks, buffer: ResendBuffer(limits: configuration.bufferLimits, videoTracks: video))
        return attachSession(now: now)
    }

    /// Capture could not start for the server's StartSession (a source did not open): the
    /// agent refuses the command with the reason (`captureFailed`, protocol.md §6.16), so the
    /// operator who asked sees why. Nothing to say without a connection or with a session open.
    public mutating func captureFailed(_ reason: String, now: Int64) -> [Action] {
        guard case .established(let reply) = link, session == nil else { return [] }
        let error = ProtocolError(.captureFailed, scope: .session, reason)
        return [send(.error(ErrorReport(error, maxBytes: Int(reply.limits.maxStringBytes))), now)]
    }

    /// Finish the session once every track has ended and everything is sent.
    public mutating func requestClose(now: Int64) -> [Action] {
        guard session != nil else { return [] }
        session!.closeRequested = true
        return maybeClose(now: now)
    }

    /// Discard the session (server-side too).
    public mutating func cancel(reason: String, now: Int64) -> [Action] {
        guard var s = session else { return [] }
        s.cancelReason = reason
        var actions: [Action] = [.cancelCapture(s.id), .log(.warning, "cancelling session \(s.id): \(reason)")]
        if s.phase == .open || s.phase == .closing {
            s.phase = .cancelling
            actions.append(send(.sessionCancel(SessionCancel(sessionID: s.id, reason: reason)), now))
        }
        session = s
        return actions
    }

    // MARK: Media

    public mutating func enqueue(_ sample: EncodedSample, now: Int64) -> [Action] {
        guard session != nil, session?.cancelReason == nil else { return [] }
        guard session?.endedTracks.contains(sample.track) == false else {
            return [.log(.error, "sample for ended track \(sample.track) discarded")]
        }
        // In place: a copy of the session would copy its resend log (see `pump`).
        let result = session!.buffer.append(sample)
        var actions: [Action] = []
        for (track, count) in result.dropped.sorted(by: { $0.key < $1.key }) {
            actions.append(.log(.warning, "resend buffer full (\(session!.buffer.byteCount) bytes): dropped the oldest \(count) unsent sample(s) of track \(track); reported to the server"))
        }
        for track in result.keyframeRequests.sorted() { actions.append(.requestKeyframe(track: track)) }
        return actions
    }

    mutating func recordDrop(track: UInt8, reason: DropReport.Reason, count: Int) {
        guard session != nil, count > 0 else { return }
        session!.buffer.recordDrop(track: track, reason: reason, count: count)
    }

    public mutating func endTrack(_ end: TrackEnd, now: Int64) -> [Action] {
        guard var s = session, !s.endedTracks.contains(end.track) else { return [] }
        s.endedTracks.insert(end.track)
        s.buffer.endTrack(end)
        session = s
        return maybeClose(now: now)
    }

    /// Sends what is waiting, up to about `maxBytes` of samples (the runtime passes what the
    /// channel can take), then the SessionClose if the session is complete.
    ///
    /// The session's resend log is mutated in place. `guard var s = session … session = s`
    /// would leave two references to the log while `s` is changed, so the first change copied
    /// the whole log: quadratic catching up after an outage (757 µs per call at 32k samples).
    public mutating func pump(maxBytes: Int = .max, now: Int64) -> [Action] {
        guard session?.phase == .open, isEstablished else { return [] }
        var outgoing: [ResendBuffer.Outgoing] = []
        var budget = maxBytes
        while budget > 0, let next = session!.buffer.nextOutgoing() {
            if case .sample(let sample) = next { budget -= sample.data.readableBytes + Sample.headerSize }
            outgoing.append(next)
        }
        var actions: [Action] = []
        actions.reserveCapacity(outgoing.count)
        for next in outgoing {
            if case .dropReport(let report) = next {
                actions.append(.log(.warning, "reporting \(report.count) dropped sample(s) of track \(report.track) (\(report.reason))"))
            }
            actions.append(send(next.message, now))
        }
        return actions + maybeClose(now: now)
    }

    /// Timers: heartbeats after `heartbeatInterval` without sending, and the idle timeout.
    public mutating func tick(now: Int64) -> [Action] {
        switch link {
        case .disconnected:
            return []
        case .awaitingHelloReply:
            if now - lastReceived >= configuration.defaultIdleTimeout {
                return [.log(.warning, "no HelloReply within \(configuration.defaultIdleTimeout / 1_000_000) ms"), .closeConnection(reason: "handshake timeout")]
            }
            return []
        case .established(let reply):
            let idle = reply.idleTimeoutMillis > 0 ? Int64(reply.idleTimeoutMillis) * 1_000_000 : configuration.defaultIdleTimeout
            if now - lastReceived >= idle {
                return [.log(.warning, "server silent for \(idle / 1_000_000) ms; reconnecting"), .closeConnection(reason: "idle timeout")]
            }
            let interval = Int64(reply.heartbeatIntervalMillis) * 1_000_000
            if now - lastSent >= interval {
                let nonce = nextNonce
                nextNonce &+= 1
                return [send(.heartbeat(Heartbeat(nonce: nonce, originTime: now)), now)]
            }
            return []
        }
    }

    // MARK: Internals

    /// What an `Ack` (and a resume's acknowledged point) does on this link. With `remoteAcks`
    /// negotiated it says "on the server's host" only: the samples are kept until their
    /// `RemoteAck`, for another server to have them resent if that host is lost (protocol.md
    /// §6.13a). Decided per link: the next connection may reach a server without it.
    private var hostAckEffect: ResendBuffer.AckEffect {
        guard case .established(let reply) = link,
              reply.capabilities.intersection(configuration.capabilities).contains(.remoteAcks) else { return .free }
        return .keep
    }

    private mutating func send(_ message: Message, _ now: Int64) -> Action {
        lastSent = now
        return .send(message)
    }

    private mutating func attachSession(now: Int64) -> [Action] {
        guard isEstablished, var s = session, s.phase == .needsAttach else { return [] }
        let message: Message
        if s.announced {
            s.phase = .resuming
            message = .sessionResume(SessionResume(sessionID: s.id, lastAcknowledged: s.buffer.acknowledged))
        } else {
            s.phase = .opening
            s.announced = true
            message = .sessionOpen(SessionOpen(sessionID: s.id, labels: s.labels, tracks: s.tracks))
        }
        session = s
        return [send(message, now)]
    }

    private mutating func maybeClose(now: Int64) -> [Action] {
        guard var s = session, s.phase == .open, s.closeRequested, s.cancelReason == nil,
              s.endedTracks.count == s.tracks.count, !s.buffer.hasOutgoing, isEstablished else { return [] }
        s.phase = .closing
        session = s
        return [send(.sessionClose(SessionClose(sessionID: s.id, finalSequence: s.buffer.lastSequence)), now),
                .log(.info, "closing session \(s.id) at sequence \(s.buffer.lastSequence)")]
    }
}

/// The server's view of one connection: checks that what the agent sends is legal in
/// the current state (protocol.md §7 "State machines"). Sans-I/O: feed it every
/// decoded message, act on the returned ``Action``, send the error of a thrown
/// ``ProtocolError`` as an ``ErrorReport`` (closing the connection if its scope is
/// `connection`).
///
/// Sequence rules (§7.3): numbers are per session, shared by all tracks, start at 1
/// and increase by exactly 1. After a resume the agent resends from the server's
/// acknowledged point; anything up to the highest number the server had already
/// received is reported as ``Action/dropDuplicate`` rather than as an error.
public struct SessionValidator: Sendable {
    /// What the server should do with an accepted message.
    public enum Action: Sendable, Hashable {
        /// Process the message.
        case accept
        /// Already received before a reconnect (a resent sample or track end): ignore it.
        case dropDuplicate
        /// The agent asks to resume a session. Look it up, then call
        /// ``resumeAccepted(_:)`` (and send ``SessionAccepted``) or ``resumeRejected()``
        /// (and send an ``ErrorReport``) before validating the next message.
        case resumeRequested(SessionResume)
        /// Refers to a session the server already ended (protocol.md §7.2): in flight when
        /// the agent was told; drop it.
        case ignoreEnded
    }

    /// What the server remembers of an interrupted session, to resume it.
    public struct ResumePoint: Sendable, Hashable {
        public var tracks: [TrackDescriptor]
        public var endedTracks: Set<UInt8>
        /// The highest sequence number received (durable or not).
        public var highestReceived: UInt64
        /// The highest contiguous durable sequence number, sent in ``SessionAccepted``;
        /// the agent resends from the next one.
        public var acknowledged: UInt64
        /// The dts of the session's first sample: the reference of the session-span bound
        /// (``SampleTimestampBounds/maxSessionSpan``). nil when the session had no sample yet
        /// or the server does not know it; then the first sample after the resume sets it.
        public var firstDTS: Int64?

        public init(tracks: [TrackDescriptor], endedTracks: Set<UInt8> = [], highestReceived: UInt64, acknowledged: UInt64,
                    firstDTS: Int64? = nil) {
            self.tracks = tracks
            self.endedTracks = endedTracks
            self.highestReceived = highestReceived
            self.acknowledged = min(acknowledged, highestReceived)
            self.firstDTS = firstDTS
        }
    }

    fileprivate struct OpenSession: Sendable {
        var id: SessionID
        var tracks: Set<UInt8>
        var ended: Set<UInt8> = []
        /// Highest sequence number ever received for the session (over all connections).
        var highestReceived: UInt64 = 0
        /// Last sequence number received on this connection; the floor for the next one.
        var lastOnConnection: UInt64 = 0
        /// dts of the session's first accepted sample (kept over a resume).
        var firstDTS: Int64?
    }

    fileprivate enum SessionState: Sendable {
        case none
        /// The server ended this session (session-scoped error): frames the agent sent before
        /// it heard are still arriving and are ignored, not treated as protocol violations.
        case ended(SessionID)
        case resuming(SessionID)
        case open(OpenSession)
    }

    private enum State: Sendable {
        case awaitingHello
        case established(SessionState)
        case failed(ProtocolError)
    }

    public let limits: ProtocolLimits
    public let supportedVersions: ClosedRange<UInt8>
    /// The capabilities the server offers (``HelloReply/capabilities``).
    public let serverCapabilities: Capabilities
    /// The version chosen from the agent's ``Hello``.
    public private(set) var negotiatedVersion: UInt8?
    /// What both sides support: the agent's ``Hello/capabilities`` and ``serverCapabilities``
    /// (protocol.md §6.1). Empty before the Hello.
    public private(set) var negotiatedCapabilities: Capabilities = []
    private var state: State = .awaitingHello

    public init(limits: ProtocolLimits = .default, supportedVersions: ClosedRange<UInt8> = ProtocolVersion.supported,
                serverCapabilities: Capabilities = .all) {
        self.limits = limits
        self.supportedVersions = supportedVersions
        self.serverCapabilities = serverCapabilities
    }

    /// The session currently open (or being resumed) on this connection.
    public var sessionID: SessionID? {
        switch state {
        case .established(.open(let s)): s.id
        case .established(.resuming(let id)): id
        default: nil
        }
    }

    /// The highest sequence number received for the open session.
    public var highestReceived: UInt64? {
        if case .established(.open(let s)) = state { return s.highestReceived }
        return nil
    }

    /// Validates one message from the agent.
    public mutating func validate(_ message: Message) throws(ProtocolError) -> Action {
        do {
            return try step(message)
        } catch {
            fail(error)
            throw error
        }
    }

    /// The server found the session for a ``Action/resumeRequested(_:)``.
    public mutating func resumeAccepted(_ point: ResumePoint) {
        guard case .established(.resuming(let id)) = state else {
            preconditionFailure("resumeAccepted without a pending resume")
        }
        state = .established(.open(OpenSession(
            id: id, tracks: Set(point.tracks.map(\.id)), ended: point.endedTracks,
            highestReceived: point.highestReceived, lastOnConnection: point.acknowledged, firstDTS: point.firstDTS)))
    }

    /// The server refused a ``Action/resumeRequested(_:)`` (e.g. `unknownSession`).
    public mutating func resumeRejected() {
        guard case .established(.resuming) = state else { preconditionFailure("resumeRejected without a pending resume") }
        state = .established(.none)
    }

    /// The server ended the open session itself (it sent a session-scoped error or a
    /// ``SessionClosed`` after a ``CancelSession`` command).
    public mutating func sessionEnded() {
        switch state {
        case .established(.open(let open)): state = .established(.ended(open.id))
        // Already ended by the validator itself (a session-scoped error it raised): stay
        // ENDED, so frames the agent sent before it heard are ignored, not violations.
        case .established(.ended): break
        case .established: state = .established(.none)
        default: break
        }
    }

    private mutating func fail(_ error: ProtocolError) {
        switch (error.scope, state) {
        case (.session, .established(.open(let open))):
            state = .established(.ended(open.id))
        case (.session, .established):
            state = .established(.none)
        case (.connection, _):
            state = .failed(error)
        default:
            break
        }
    }

    private mutating func step(_ message: Message) throws(ProtocolError) -> Action {
        let session: SessionState
        switch state {
        case .failed(let error):
            throw error
        case .awaitingHello:
            guard case .hello(let hello) = message else {
                throw ProtocolError(.handshakeRequired, "\(message.type) before Hello")
            }
            guard let version = ProtocolVersion.negotiate(agent: hello.versions, server: supportedVersions) else {
                throw ProtocolError(.noCommonVersion, "agent speaks \(hello.versions), server \(supportedVersions)")
            }
            negotiatedVersion = version
            negotiatedCapabilities = hello.capabilities.intersection(serverCapabilities)
            state = .established(.none)
            return .accept
        case .established(let s):
            session = s
        }

        guard message.type.direction?.allowsSender(.agent) == true else {
            throw ProtocolError(.unexpectedMessage, "\(message.type) is not sent by agents")
        }

        switch message {
        case .hello:
            throw ProtocolError(.unexpectedMessage, "second Hello")
        case .heartbeat, .heartbeatReply:
            return .accept
        case .error(let report):
            // The agent reports a problem; it ends what its scope says (protocol.md §6.5),
            // except its refusal of a StartSession (`sessionAlreadyOpen`, `captureFailed`),
            // which ends nothing: a session it records goes on.
            if report.scope == .connection {
                state = .failed(report.error)
            } else if !report.code.refusesCommandOnly {
                sessionEnded()
            }
            return .accept
        case .sessionOpen(let open):
            guard session.isIdle else { throw alreadyOpen(session) }
            guard open.tracks.count <= limits.maxTracksPerSession else {
                throw ProtocolError(.tooManyTracks, "\(open.tracks.count) tracks, at most \(limits.maxTracksPerSession)")
            }
            state = .established(.open(OpenSession(id: open.sessionID, tracks: Set(open.tracks.map(\.id)))))
            return .accept
        case .sessionResume(let resume):
            guard negotiatedCapabilities.contains(.resume) else {
                throw ProtocolError(.unexpectedMessage, "SessionResume, but the resume capability was not negotiated in Hello")
            }
            guard session.isIdle else { throw alreadyOpen(session) }
            state = .established(.resuming(resume.sessionID))
            return .resumeRequested(resume)
        case .sample, .trackEnd, .dropReport, .sessionClose, .sessionCancel:
            if case .ended(let id) = session {
                // A close or cancel for the ended session is the agent acknowledging the end.
                if case .sessionClose(let c) = message, c.sessionID == id { state = .established(.none) }
                if case .sessionCancel(let c) = message, c.sessionID == id { state = .established(.none) }
                return .ignoreEnded
            }
            return try stepInSession(message, session)
        case .helloReply, .sessionAccepted, .sessionClosed, .ack, .remoteAck, .startSession, .stopSession, .cancelSession:
            // Excluded by the direction check above.
            throw ProtocolError(.unexpectedMessage, "\(message.type) is not sent by agents")
        }
    }

    /// The messages that need an open session.
    private mutating func stepInSession(_ message: Message, _ session: SessionState) throws(ProtocolError) -> Action {
        switch message {
        case .sample(let sample):
            var open = try openSession(session, for: "Sample")
            let action = try open.admit(sample)
            state = .established(.open(open))
            return action
        case .trackEnd(let end):
            var open = try openSession(session, for: "TrackEnd")
            try open.requireKnown(end.track)
            // A track end resent after a resume is a duplicate, not an error.
            let (inserted, _) = open.ended.insert(end.track)
            state = .established(.open(open))
            return inserted ? .accept : .dropDuplicate
        case .dropReport(let report):
            let open = try openSession(session, for: "DropReport")
            try open.requireKnown(report.track)
            try open.requireNotEnded(report.track)
            return .accept
        case .sessionClose(let close):
            let open = try openSession(session, for: "SessionClose")
            try open.requireID(close.sessionID)
            guard close.finalSequence == open.highestReceived else {
                throw ProtocolError(.finalSequenceMismatch, "SessionClose says \(close.finalSequence), last received \(open.highestReceived)")
            }
            state = .established(.none)
            return .accept
        case .sessionCancel(let cancel):
            let open = try openSession(session, for: "SessionCancel")
            try open.requireID(cancel.sessionID)
            state = .established(.none)
            return .accept
        default:
            throw ProtocolError(.unexpectedMessage, "\(message.type) is not a session message")
        }
    }

    private func openSession(_ session: SessionState, for what: String) throws(ProtocolError) -> OpenSession {
        switch session {
        case .ended(let id):
            throw ProtocolError(.noOpenSession, "\(what) for session \(id), which has ended")
        case .open(let open):
            return open
        case .none:
            throw ProtocolError(.noOpenSession, "\(what) before SessionOpen")
        case .resuming(let id):
            throw ProtocolError(.noOpenSession, "\(what) before session \(id) was accepted for resume")
        }
    }

    private func alreadyOpen(_ session: SessionState) -> ProtocolError {
        ProtocolError(.sessionAlreadyOpen, "session \(sessionID.map(String.init(describing:)) ?? "?") is still open on this connection")
    }
}

extension SessionValidator.OpenSession {
    func requireKnown(_ track: UInt8) throws(ProtocolError) {
        guard tracks.contains(track) else { throw ProtocolError(.unknownTrack, "track \(track) is not in session \(id)") }
    }

    func requireNotEnded(_ track: UInt8) throws(ProtocolError) {
        guard !ended.contains(track) else { throw ProtocolError(.trackEnded, "track \(track) has already ended") }
    }

    func requireID(_ other: SessionID) throws(ProtocolError) {
        guard other == id else { throw ProtocolError(.sessionMismatch, "session \(other) is not the open session \(id)") }
    }

    /// §7.3: floor < seq ≤ highest → duplicate; seq = highest + 1 → new; else error.
    /// A new sample must also keep the timestamp bounds of §6.12 (``SampleTimestampBounds``);
    /// a duplicate is dropped unread, so its timestamps do not matter.
    mutating func admit(_ sample: Sample) throws(ProtocolError) -> SessionValidator.Action {
        try requireKnown(sample.track)
        let seq = sample.sequence
        guard seq > lastOnConnection else {
            throw ProtocolError(.nonMonotonicSequence, "sequence \(seq) after \(lastOnConnection)")
        }
        if seq <= highestReceived {
            lastOnConnection = seq
            return .dropDuplicate
        }
        guard seq == highestReceived + 1 else {
            throw ProtocolError(.sequenceGap, "sequence \(seq) after \(highestReceived); samples \(highestReceived + 1)...\(seq - 1) are missing")
        }
        try requireNotEnded(sample.track)
        if let violation = SampleTimestampBounds.violation(pts: sample.pts, dts: sample.dts, duration: sample.duration,
                                                           sessionFirstDTS: firstDTS) {
            throw ProtocolError(.timestampOutOfRange, "track \(sample.track) sequence \(seq): \(violation)")
        }
        firstDTS = firstDTS ?? sample.dts
        lastOnConnection = seq
        highestReceived = seq
        return .accept
    }
}

extension SessionValidator.SessionState {
    /// No session open: a new one may be opened or resumed.
    var isIdle: Bool {
        switch self {
        case .none, .ended: true
        case .resuming, .open: false
        }
    }
}

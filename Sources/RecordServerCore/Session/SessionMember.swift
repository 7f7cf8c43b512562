import Shared

/// One agent's part of a session. A session recorded from one agent has one member; a session
/// across agents (docs/architecture.md, "Sessions across agents") has one per agent, each over
/// its own connection, all muxed into the session's one recording.
///
/// Each member keeps what the protocol is about between it and its agent: the id the agent
/// opened its part with, its sequence numbers (muxed in the member's own lane,
/// ``SequenceLane``), its ack point, its tracks' protocol ids, and how its clock maps onto the
/// server's. What the files hold is the session's.
struct SessionMember: Sendable {
    enum Attachment: Sendable, Equatable {
        case attached(connection: UInt64)
        /// Its agent went away; its part waits for a resume until `deadline`.
        case detached(deadline: ContinuousClock.Instant)
        /// Over: closed by its agent, not resumed in time, or ended by an error. Its tracks are
        /// ended in the recording; the others go on.
        case left
    }

    let agentID: String
    /// The id its agent opened (and resumes) its part with.
    let wireID: SessionID
    /// Its sequence numbers' lane in the muxer: its index in the session.
    let lane: UInt16
    /// What its agent opened its part with; nil while the session is dormant.
    var open: SessionOpen?
    /// The session's track id of each of its tracks' protocol ids (the same ids for a session
    /// of one agent).
    var sessionTracks: [UInt8: UInt8]
    var attachment: Attachment
    /// Its agent's sequences: the highest received, and the highest durable (its ack point).
    var highestReceived: UInt64 = 0
    var acknowledged: UInt64 = 0
    /// The ack point its connection last handed to the agent.
    var reportedAck: UInt64 = 0
    /// The last `RemoteAck` point sent to its agent (protocol.md §6.13a).
    var reportedRemoteAck: UInt64 = 0
    /// Its `SessionClose` (with `remoteAcks`) waits until what it closed at is in object storage.
    var remoteWaiters: [(through: UInt64, continuation: CheckedContinuation<Bool, Never>)] = []
    /// Its first sample's decode time on its agent's clock (the validator's span bound).
    var firstDTS: Int64?
    /// Its tracks (protocol ids) that have ended.
    var endedTracks: Set<UInt8> = []
    /// Its first sample the muxer refused: its ack point never passes it.
    var refusedSequence: UInt64?
    var refusal = ""
    /// Maps its agent's clock onto the server's; nil for a session of one agent, whose times
    /// go into the file as the agent stamped them.
    var clock: ClockMapping?
    /// Its agent's `SessionClose` waits for the rest of its samples to become durable.
    var closeWaiters: [CheckedContinuation<UInt64, Never>] = []

    var isAttached: Bool { if case .attached = attachment { true } else { false } }
    var hasLeft: Bool { attachment == .left }

    /// The muxer's sequence for one of its agent's sequences; nil past 2^48.
    func muxerSequence(_ sequence: UInt64) -> UInt64? { SequenceLane.compose(lane: lane, local: sequence) }

    /// What the connection's validator needs to continue this part after a resume.
    var resumePoint: SessionValidator.ResumePoint {
        SessionValidator.ResumePoint(tracks: open?.tracks ?? [], endedTracks: endedTracks, highestReceived: highestReceived,
                                     acknowledged: acknowledged, firstDTS: firstDTS)
    }
}

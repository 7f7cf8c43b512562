import Logging
import Testing
import TestSupport
import WireProtocol
@testable import CaptureAgentCore

/// The two acknowledgement levels (protocol.md §6.13a, §7.3): with `remoteAcks` negotiated an
/// `Ack` says "on the server's host" and frees nothing; a `RemoteAck` ("in object storage")
/// frees; a resume answered by a server that took the session over may name a lower point.
@Suite("Agent protocol state machine: Ack and RemoteAck, takeover by another server")
struct RemoteAckTests {
    /// A server that ships to object storage while it records.
    static let shipping = HelloReply(capabilities: .all, serverID: "rec-1", softwareVersion: "server/1.0",
                                     heartbeatIntervalMillis: 1000, idleTimeoutMillis: 5000)
    /// Another server of the fleet, which took the session over.
    static let other = HelloReply(capabilities: .all, serverID: "rec-2", softwareVersion: "server/1.0",
                                  heartbeatIntervalMillis: 1000, idleTimeoutMillis: 5000)
    /// A server without object storage (the level `Ack` frees, as before remoteAcks).
    static let local = AgentStateMachineTests.reply
    let session: SessionID = "cam-a-s1"
    let base = AgentStateMachineTests()

    /// An open session on a `reply` link that sent five audio samples; `ack`/`remote` received.
    func fiveSamplesSent(on reply: HelloReply, ack: UInt64, remote: UInt64?) -> (AgentStateMachine, [Sample]) {
        var m = base.machine()
        _ = connect(&m, to: reply, now: 0)
        _ = m.openSession(id: session, labels: [], tracks: base.tracks, now: 0)
        _ = m.received(.sessionAccepted(SessionAccepted(sessionID: session, acknowledged: 0)), now: 0)
        for pts in 0..<5 { _ = m.enqueue(encoded(track: 2, pts: Int64(pts), fill: UInt8(pts)), now: 0) }
        let sent = m.pump(now: 0).samples
        _ = m.received(.ack(Ack(sessionID: session, sequence: ack)), now: 0)
        if let remote { _ = m.received(.remoteAck(Ack(sessionID: session, sequence: remote)), now: 0) }
        return (m, sent)
    }

    func connect(_ m: inout AgentStateMachine, to reply: HelloReply, now: Int64) -> [Action] {
        _ = m.connectionEstablished(now: now)
        return m.received(.helloReply(reply), now: now + 1)
    }

    func logs(_ actions: [Action], _ level: Logger.Level) -> [String] {
        actions.compactMap { if case .log(level, let text) = $0 { text } else { nil } }
    }

    @Test func anAckKeepsSamplesUntilTheRemoteAckFreesThem() {
        var (m, _) = fiveSamplesSent(on: Self.shipping, ack: 4, remote: nil)
        #expect(m.buffer?.acknowledged == 4)
        #expect(m.buffer?.unacknowledgedCount == 5, "durable on the server's host only: all kept")
        _ = m.received(.remoteAck(Ack(sessionID: session, sequence: 2)), now: 1)
        #expect(m.buffer?.unacknowledgedCount == 3)
        #expect(m.buffer?.acknowledged == 4)

        // One for another session is ignored (logged at debug), not a protocol error.
        let stray = m.received(.remoteAck(Ack(sessionID: "cam-a-s0", sequence: 5)), now: 2)
        #expect(stray == [.log(.debug, "remote ack for another session cam-a-s0")])
        #expect(m.buffer?.unacknowledgedCount == 3)

        // Above the Ack point: an Ack too. Acks never go back.
        _ = m.received(.remoteAck(Ack(sessionID: session, sequence: 5)), now: 3)
        _ = m.received(.ack(Ack(sessionID: session, sequence: 4)), now: 4)
        #expect(m.buffer?.acknowledged == 5 && m.buffer?.freedThrough == 5)
        #expect(m.buffer?.unacknowledgedCount == 0)
    }

    /// The owner's host is lost after Ack 4 and RemoteAck 2. Another server says `sessionBusy`
    /// while the owner's lease runs, then takes over with what reached object storage (2): the
    /// agent resends 3...5 byte for byte, and says so at info, not as a loss.
    @Test func aTakeoverResumesBelowTheLastAckAndResendsWhatLiesAboveTheRemoteAck() {
        var (m, sent) = fiveSamplesSent(on: Self.shipping, ack: 4, remote: 2)
        _ = m.connectionLost(now: 1)
        #expect(connect(&m, to: Self.other, now: 2).sent == [.sessionResume(SessionResume(sessionID: session, lastAcknowledged: 4))])
        let busy = m.received(.error(ErrorReport(code: .sessionBusy, scope: .session, message: "leased by rec-1")), now: 3)
        #expect(busy.contains { if case .closeConnection = $0 { true } else { false } })
        #expect(m.buffer?.unacknowledgedCount == 3)
        _ = m.connectionLost(now: 4)

        #expect(connect(&m, to: Self.other, now: 5).sent == [.sessionResume(SessionResume(sessionID: session, lastAcknowledged: 4))])
        let accepted = m.received(.sessionAccepted(SessionAccepted(sessionID: session, acknowledged: 2)), now: 6)
        #expect(logs(accepted, .error).isEmpty && logs(accepted, .warning).isEmpty, "\(accepted)")
        #expect(logs(accepted, .info).contains { $0.contains("server has 1...2, below the last Ack (4)") && $0.contains("nothing is lost") },
                "\(accepted)")
        #expect(m.pump(now: 6).samples == Array(sent[2...]))
        #expect(m.buffer?.unacknowledgedCount == 3, "a SessionAccepted frees nothing with remoteAcks")
        #expect(m.buffer?.acknowledged == 4)

        // The new owner's Ack frees nothing either; its RemoteAck does.
        _ = m.received(.ack(Ack(sessionID: session, sequence: 5)), now: 7)
        #expect(m.buffer?.unacknowledgedCount == 3)
        _ = m.received(.remoteAck(Ack(sessionID: session, sequence: 5)), now: 8)
        #expect(m.buffer?.unacknowledgedCount == 0)
    }

    /// The close path waits for SessionClosed, not for every sample to be freed: with only local
    /// Acks the SessionClose still goes out once everything is sent.
    @Test func theSessionClosesWhileAcksAreLocalOnly() {
        var (m, _) = fiveSamplesSent(on: Self.shipping, ack: 5, remote: 1)
        _ = m.endTrack(TrackEnd(track: 1, reason: .endOfStream), now: 1)
        _ = m.endTrack(TrackEnd(track: 2, reason: .endOfStream), now: 1)
        _ = m.requestClose(now: 1)
        #expect(m.pump(now: 1).sent.last == .sessionClose(SessionClose(sessionID: session, finalSequence: 5)))
        #expect(m.buffer?.isDrained == false)
        _ = m.received(.remoteAck(Ack(sessionID: session, sequence: 5)), now: 2)
        let closed = SessionClosed(sessionID: session, outcome: .finalized, durableSequence: 5)
        #expect(m.received(.sessionClosed(closed), now: 3).contains(.sessionFinished(closed)))
        #expect(m.sessionID == nil)
    }

    /// The next connection may reach a server without object storage: its SessionAccepted and
    /// its Acks free, as they always did, and a RemoteAck from it is a protocol error.
    @Test func aResumeOnAServerWithoutRemoteAcksFreesAsBefore() {
        var (m, sent) = fiveSamplesSent(on: Self.shipping, ack: 4, remote: 1)
        _ = m.connectionLost(now: 1)
        #expect(connect(&m, to: Self.local, now: 2).sent == [.sessionResume(SessionResume(sessionID: session, lastAcknowledged: 4))])
        _ = m.received(.sessionAccepted(SessionAccepted(sessionID: session, acknowledged: 3)), now: 3)
        #expect(m.buffer?.freedThrough == 3 && m.buffer?.unacknowledgedCount == 2)
        #expect(m.pump(now: 3).samples == Array(sent[3...]))
        _ = m.received(.ack(Ack(sessionID: session, sequence: 5)), now: 4)
        #expect(m.buffer?.unacknowledgedCount == 0)

        let violation = m.received(.remoteAck(Ack(sessionID: session, sequence: 5)), now: 5)
        #expect(violation.sent.contains { if case .error(let report) = $0 { report.code == .unexpectedMessage } else { false } })
        #expect(violation.contains { if case .closeConnection = $0 { true } else { false } })
    }

    /// Without remoteAcks a point below the last Ack means the server lost what it acknowledged
    /// and the agent freed it: that is a loss, and the log says which samples.
    @Test func aResumeBelowWhatWasFreedIsLoggedAsALoss() {
        var (m, _) = fiveSamplesSent(on: Self.local, ack: 4, remote: nil)
        #expect(m.buffer?.unacknowledgedCount == 1)
        _ = m.connectionLost(now: 1)
        _ = connect(&m, to: Self.local, now: 2)
        let accepted = m.received(.sessionAccepted(SessionAccepted(sessionID: session, acknowledged: 2)), now: 3)
        #expect(logs(accepted, .error).contains { $0.contains("samples 3...4 were freed here and are lost") }, "\(accepted)")
    }
}

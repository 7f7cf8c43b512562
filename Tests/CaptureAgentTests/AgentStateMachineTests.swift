import NIOCore
import Testing
import TestSupport
import WireProtocol
@testable import CaptureAgentCore

typealias Action = AgentStateMachine.Action

extension Array where Element == AgentStateMachine.Action {
    var sent: [Message] { compactMap { if case .send(let m) = $0 { m } else { nil } } }
    var samples: [Sample] { sent.compactMap { if case .sample(let s) = $0 { s } else { nil } } }
}

@Suite("Agent protocol state machine, driven by server messages")
struct AgentStateMachineTests {
    /// A server without object storage, so without `remoteAcks`: an `Ack` frees (RemoteAckTests
    /// has the servers that offer it).
    static let reply = HelloReply(capabilities: Capabilities.all.subtracting(.remoteAcks), serverID: "rec-1", softwareVersion: "server/1.0",
                                  heartbeatIntervalMillis: 1000, idleTimeoutMillis: 5000)
    let session: SessionID = "cam-a-s1"
    let tracks = [
        TrackDescriptor(id: 1, label: "front", timescale: 90000, format: .h264(H264Format(width: 64, height: 48, sequenceParameterSets: [[0x67, 1]], pictureParameterSets: [[0x68, 1]]))),
        TrackDescriptor(id: 2, label: "mic", timescale: 48000, format: .opus(OpusFormat(sampleRate: 48000, channels: 1, opusHead: Array("OpusHead".utf8) + [1, 1, 0x38, 1, 0x80, 0xBB, 0, 0, 0, 0, 0]))),
    ]

    func machine(random: [UInt64] = [0]) -> AgentStateMachine {
        AgentStateMachine(
            configuration: .init(agentID: "cam-a", softwareVersion: "capture-agent/test",
                                 backoff: ReconnectBackoff(initial: 100_000_000, maximum: 1_000_000_000)),
            random: ScriptedRandom(values: random))
    }

    func handshake(_ m: inout AgentStateMachine, now: Int64) -> [Action] {
        let hello = m.connectionEstablished(now: now)
        guard case .hello(let h)? = hello.sent.first else { Issue.record("no Hello"); return [] }
        #expect(h.agentID == "cam-a")
        #expect(h.capabilities == .all)
        return m.received(.helloReply(Self.reply), now: now + 1)
    }

    @Test func fullLifecycleWithDisconnectResumeAndExactResend() throws {
        var m = machine()
        var t: Int64 = 1_000

        // Handshake, then a session: SessionOpen waits for nothing but the handshake.
        let hs = handshake(&m, now: t)
        #expect(hs.contains(.negotiated(Self.reply)))
        #expect(hs.sent.isEmpty)
        let open = m.openSession(id: session, labels: [Label("room", "a")], tracks: tracks, now: t)
        #expect(open.sent == [.sessionOpen(SessionOpen(sessionID: session, labels: [Label("room", "a")], tracks: tracks))])

        // Samples produced before acceptance wait.
        _ = m.enqueue(encoded(track: 1, pts: 0, fill: 1), now: t)
        #expect(m.pump(now: t).isEmpty)
        _ = m.received(.sessionAccepted(SessionAccepted(sessionID: session, acknowledged: 0)), now: t)
        _ = m.enqueue(encoded(track: 2, pts: 0, fill: 2), now: t)
        _ = m.enqueue(encoded(track: 1, pts: 33, keyframe: false, fill: 3), now: t)
        let first = m.pump(now: t).samples
        #expect(first.map(\.sequence) == [1, 2, 3])
        #expect(first.map(\.track) == [1, 2, 1])
        #expect(first[0].flags == [.keyframe] && first[2].flags == [])

        _ = m.received(.ack(Ack(sessionID: session, sequence: 2)), now: t)
        #expect(m.buffer?.unacknowledgedCount == 1)

        // The link dies. Samples keep coming meanwhile.
        let lost = m.connectionLost(now: t)
        #expect(lost.contains(.scheduleReconnect(afterNanoseconds: 50_000_000)))
        _ = m.enqueue(encoded(track: 2, pts: 20, fill: 4), now: t)
        #expect(m.pump(now: t).isEmpty)

        // Reconnect: Hello, then a resume with the last ack — never a second SessionOpen.
        t += 100_000_000
        let hs2 = handshake(&m, now: t)
        #expect(hs2.sent == [.sessionResume(SessionResume(sessionID: session, lastAcknowledged: 2))])
        #expect(m.pump(now: t).isEmpty)  // nothing before SessionAccepted
        _ = m.received(.sessionAccepted(SessionAccepted(sessionID: session, acknowledged: 2)), now: t)
        let resent = m.pump(now: t).samples
        #expect(resent.map(\.sequence) == [3, 4])
        #expect(resent[0] == first[2])  // byte-for-byte the same sample
        #expect(resent[1].pts == 20 && resent[1].track == 2)

        // Close: tracks end, then SessionClose with the final sequence, then SessionClosed.
        _ = m.endTrack(TrackEnd(track: 1, reason: .endOfStream), now: t)
        let stop = m.requestClose(now: t)
        #expect(stop.sent.isEmpty)  // track 2 has not ended yet
        _ = m.endTrack(TrackEnd(track: 2, reason: .error, message: "mic gone"), now: t)
        let closing = m.pump(now: t)
        #expect(closing.sent == [
            .trackEnd(TrackEnd(track: 1, reason: .endOfStream)),
            .trackEnd(TrackEnd(track: 2, reason: .error, message: "mic gone")),
            .sessionClose(SessionClose(sessionID: session, finalSequence: 4)),
        ])
        let closed = SessionClosed(sessionID: session, outcome: .finalized, durableSequence: 4)
        let done = m.received(.sessionClosed(closed), now: t)
        #expect(done.contains(.sessionFinished(closed)))
        #expect(m.sessionID == nil)
    }

    @Test func closingIsRepeatedAfterAReconnect() {
        var m = machine()
        _ = handshake(&m, now: 0)
        _ = m.openSession(id: session, labels: [], tracks: [tracks[1]], now: 0)
        _ = m.received(.sessionAccepted(SessionAccepted(sessionID: session, acknowledged: 0)), now: 0)
        _ = m.enqueue(encoded(track: 2, pts: 0), now: 0)
        _ = m.endTrack(TrackEnd(track: 2, reason: .endOfStream), now: 0)
        _ = m.requestClose(now: 0)
        #expect(m.pump(now: 0).sent.last == .sessionClose(SessionClose(sessionID: session, finalSequence: 1)))
        _ = m.connectionLost(now: 0)
        #expect(handshake(&m, now: 1).sent == [.sessionResume(SessionResume(sessionID: session, lastAcknowledged: 0))])
        _ = m.received(.sessionAccepted(SessionAccepted(sessionID: session, acknowledged: 1)), now: 1)
        // The sample is durable; the TrackEnd is resent (the server ignores a repeat), then the close.
        #expect(m.pump(now: 1).sent == [
            .trackEnd(TrackEnd(track: 2, reason: .endOfStream)),
            .sessionClose(SessionClose(sessionID: session, finalSequence: 1)),
        ])
    }

    @Test func aSessionTheServerNeverSawIsOpenedAgain() {
        var m = machine()
        _ = handshake(&m, now: 0)
        _ = m.openSession(id: session, labels: [], tracks: tracks, now: 0)
        _ = m.connectionLost(now: 0)  // before SessionAccepted
        #expect(handshake(&m, now: 1).sent == [.sessionResume(SessionResume(sessionID: session, lastAcknowledged: 0))])
        let again = m.received(.error(ErrorReport(code: .unknownSession, scope: .session, message: "no such session")), now: 1)
        #expect(again.sent == [.sessionOpen(SessionOpen(sessionID: session, labels: [], tracks: tracks))])
    }

    @Test func anExpiredSessionFailsLoudly() {
        var m = machine()
        _ = handshake(&m, now: 0)
        _ = m.openSession(id: session, labels: [], tracks: tracks, now: 0)
        _ = m.received(.sessionAccepted(SessionAccepted(sessionID: session, acknowledged: 0)), now: 0)
        _ = m.enqueue(encoded(track: 2, pts: 0), now: 0)
        _ = m.enqueue(encoded(track: 2, pts: 1), now: 0)
        _ = m.pump(now: 0)
        _ = m.received(.ack(Ack(sessionID: session, sequence: 1)), now: 0)
        _ = m.connectionLost(now: 0)
        _ = handshake(&m, now: 1)
        let report = ErrorReport(code: .unknownSession, scope: .session, message: "expired")
        let actions = m.received(.error(report), now: 1)
        #expect(actions.contains(.sessionFailed(session, report)))
        #expect(actions.contains(.cancelCapture(session)))
        #expect(actions.contains { if case .log(.error, let text) = $0 { text.contains("1 unacknowledged") } else { false } })
        #expect(m.sessionID == nil)
    }

    /// An open session that sent five audio samples, the first `acknowledged` of them acked.
    func machineWithFiveSamplesSent(acknowledged: UInt64) -> AgentStateMachine {
        var m = machine()
        _ = handshake(&m, now: 0)
        _ = m.openSession(id: session, labels: [], tracks: tracks, now: 0)
        _ = m.received(.sessionAccepted(SessionAccepted(sessionID: session, acknowledged: 0)), now: 0)
        for pts in 0..<5 { _ = m.enqueue(encoded(track: 2, pts: Int64(pts)), now: 0) }
        _ = m.pump(now: 0)
        _ = m.received(.ack(Ack(sessionID: session, sequence: acknowledged)), now: 0)
        return m
    }

    /// A resume answered with sessionBusy (the server has not yet seen the previous connection
    /// close) keeps the session and every sample, and resumes again after a reconnect — the
    /// hardware bench's drift run on an overloaded guest lost 8,376 samples here when the
    /// agent took it as the end of the session.
    @Test func aBusyResumeIsRetriedAfterAReconnectWithEverySampleKept() {
        var m = machineWithFiveSamplesSent(acknowledged: 2)
        _ = m.connectionLost(now: 1)
        #expect(handshake(&m, now: 2).sent == [.sessionResume(SessionResume(sessionID: session, lastAcknowledged: 2))])
        let busy = ErrorReport(code: .sessionBusy, scope: .session, message: "session cam-a-s1 is still attached to another connection")
        let actions = m.received(.error(busy), now: 3)
        #expect(actions.contains { if case .closeConnection = $0 { true } else { false } })
        #expect(!actions.contains { if case .sessionFailed = $0 { true } else { false } })
        #expect(m.sessionID == session)
        #expect(m.buffer?.unacknowledgedCount == 3)
        _ = m.connectionLost(now: 4)
        #expect(handshake(&m, now: 5).sent == [.sessionResume(SessionResume(sessionID: session, lastAcknowledged: 2))])
        _ = m.received(.sessionAccepted(SessionAccepted(sessionID: session, acknowledged: 2)), now: 6)
        #expect(m.pump(now: 6).samples.map(\.sequence) == [3, 4, 5])
    }

    /// A sample the server refuses ends the session before it (issue 14, finding 2): the agent
    /// counts it and says exactly which samples are stored.
    @Test func aRefusedSampleIsCountedAndTheStoredRangeNamed() {
        var m = machineWithFiveSamplesSent(acknowledged: 3)
        #expect(m.samplesRefused == 0)
        let report = ErrorReport(code: .sampleRefused, scope: .session, message: "sample 4 of track 2: dts goes backwards")
        let actions = m.received(.error(report), now: 0)
        #expect(m.samplesRefused == 1)
        #expect(actions.contains(.sessionFailed(session, report)))
        #expect(actions.contains { if case .log(.error, let text) = $0 {
            text.contains("samples 1…3 are stored, the 2 after them are not") && text.contains("dts goes backwards")
        } else { false } })
        #expect(m.sessionID == nil)
    }

    @Test func aStartItCannotCaptureForIsRefusedWithTheReasonAndEndsNothing() {
        var m = machine()
        let reason = "back: /dev/video2: cannot open: No such file or directory"
        #expect(m.captureFailed(reason, now: 0).isEmpty, "nothing to tell before the handshake")
        _ = handshake(&m, now: 0)
        #expect(m.received(.startSession(StartSession()), now: 0).contains(.startCapture(labels: [], at: nil)))
        let refusal = m.captureFailed(reason, now: 0)
        #expect(refusal.sent == [.error(ErrorReport(code: .captureFailed, scope: .session, message: reason))])
        #expect(m.sessionID == nil && m.isEstablished)
        // A long reason is cut to the server's string limit, not refused by the encoder.
        let long = m.captureFailed(String(repeating: "x", count: 100_000), now: 0)
        guard case .error(let cut)? = long.sent.first else { Issue.record("no error"); return }
        #expect(cut.message.utf8.count == Int(Self.reply.limits.maxStringBytes))
        // With a session open (a start that raced a running one) there is nothing to refuse.
        _ = m.openSession(id: session, labels: [], tracks: tracks, now: 0)
        #expect(m.captureFailed(reason, now: 0).isEmpty)
    }

    /// protocol.md §6.7: a resume of a session that finished meanwhile is answered with its
    /// SessionClosed; the agent ends the session and names the samples that are not stored.
    @Test func aResumeAnsweredWithSessionClosedEndsTheSessionAndNamesWhatIsNotStored() {
        var m = machine()
        _ = handshake(&m, now: 0)
        _ = m.openSession(id: session, labels: [], tracks: tracks, now: 0)
        _ = m.received(.sessionAccepted(SessionAccepted(sessionID: session, acknowledged: 0)), now: 0)
        for pts in 0 ..< 5 { _ = m.enqueue(encoded(track: 2, pts: Int64(pts)), now: 0) }
        #expect(m.pump(now: 0).samples.count == 5)
        _ = m.connectionLost(now: 1)
        let resume = handshake(&m, now: 2)
        #expect(resume.sent == [.sessionResume(SessionResume(sessionID: session, lastAcknowledged: 0))])
        let closed = SessionClosed(sessionID: session, outcome: .finalized, durableSequence: 3)
        let actions = m.received(.sessionClosed(closed), now: 3)
        #expect(actions.contains(.sessionFinished(closed)))
        #expect(actions.contains { if case .log(.error, let text) = $0 { text.contains("samples 4...5 were not stored") } else { false } },
                "\(actions)")
        #expect(m.sessionID == nil)
    }

    @Test func aScheduledStartKeepsItsInstant() {
        var m = machine()
        _ = handshake(&m, now: 0)
        let start = m.received(.startSession(StartSession(labels: [], startAt: 2_000_000_000)), now: 500_000_000)
        #expect(start.contains(.startCapture(labels: [], at: 2_000_000_000)))
    }

    @Test func obeysStartStopAndCancelCommands() {
        var m = machine()
        _ = handshake(&m, now: 0)
        let start = m.received(.startSession(StartSession(labels: [Label("take", "3")])), now: 0)
        #expect(start.contains(.startCapture(labels: [Label("take", "3")], at: nil)))
        _ = m.openSession(id: session, labels: [Label("take", "3")], tracks: tracks, now: 0)
        // A second StartSession while recording is refused with a session-scoped error.
        let busy = m.received(.startSession(StartSession()), now: 0)
        guard case .error(let e)? = busy.sent.first else { Issue.record("no error"); return }
        #expect(e.code == .sessionAlreadyOpen && e.scope == .session)

        _ = m.received(.sessionAccepted(SessionAccepted(sessionID: session, acknowledged: 0)), now: 0)
        #expect(m.received(.stopSession(StopSession(sessionID: "other")), now: 0).sent.isEmpty)
        let stop = m.received(.stopSession(StopSession(sessionID: session, stopAt: 1_500)), now: 0)
        #expect(stop.contains(.stopCapture(session, at: 1_500)), "a scheduled stop keeps its instant")

        let cancel = m.received(.cancelSession(CancelSession(sessionID: session, reason: "operator")), now: 0)
        #expect(cancel.contains(.cancelCapture(session)))
        #expect(cancel.sent == [.sessionCancel(SessionCancel(sessionID: session, reason: "operator"))])
        // Nothing is sent for a cancelled session any more.
        _ = m.enqueue(encoded(track: 2, pts: 5), now: 0)
        #expect(m.pump(now: 0).isEmpty)
        let closed = SessionClosed(sessionID: session, outcome: .cancelled, durableSequence: 0)
        #expect(m.received(.sessionClosed(closed), now: 0).contains(.sessionFinished(closed)))
    }

    @Test func heartbeatsMeasureRoundTripAndOffsetAndAnswerTheServer() {
        var m = machine()
        _ = handshake(&m, now: 0)
        #expect(m.tick(now: 500_000_000).isEmpty)  // interval 1 s not reached
        let hb = m.tick(now: 1_000_000_000)
        #expect(hb.sent == [.heartbeat(Heartbeat(nonce: 1, originTime: 1_000_000_000))])
        // Server clock 5 s ahead; 10 ms each way; 1 ms processing.
        let reply = HeartbeatReply(nonce: 1, originTime: 1_000_000_000, receiveTime: 6_010_000_000, transmitTime: 6_011_000_000)
        _ = m.received(.heartbeatReply(reply), now: 1_021_000_000)
        #expect(m.lastRoundTrip == 20_000_000)
        #expect(m.lastClockOffset == 5_000_000_000)
        // Just sent: no heartbeat for another interval.
        #expect(m.tick(now: 1_500_000_000).isEmpty)

        let answer = m.received(.heartbeat(Heartbeat(nonce: 9, originTime: 42)), now: 1_600_000_000)
        #expect(answer.sent == [.heartbeatReply(HeartbeatReply(nonce: 9, originTime: 42, receiveTime: 1_600_000_000, transmitTime: 1_600_000_000))])
    }

    @Test func aSilentServerIsDroppedAfterTheIdleTimeout() {
        var m = machine()
        _ = handshake(&m, now: 0)
        _ = m.received(.ack(Ack(sessionID: "x", sequence: 1)), now: 1_000_000_000)
        #expect(!m.tick(now: 5_999_999_999).contains { if case .closeConnection = $0 { true } else { false } })
        #expect(m.tick(now: 6_000_000_001).contains(.closeConnection(reason: "idle timeout")))
    }

    @Test func protocolViolationsAreReportedAndCloseTheConnection() {
        var m = machine()
        _ = m.connectionEstablished(now: 0)
        let early = m.received(.ack(Ack(sessionID: "s", sequence: 1)), now: 0)
        #expect(early.contains { if case .closeConnection = $0 { true } else { false } })
        guard case .error(let e)? = early.sent.first else { Issue.record("no Error sent"); return }
        #expect(e.code == .unexpectedMessage)

        var n = machine()
        _ = handshake(&n, now: 0)
        let wrongDirection = n.received(.sample(Sample(track: 1, sequence: 1, pts: 0, dts: 0, duration: 0, data: ByteBuffer())), now: 0)
        #expect(wrongDirection.contains { if case .closeConnection = $0 { true } else { false } })

        let refused = machine()
        var r = refused
        _ = r.connectionEstablished(now: 0)
        let auth = r.received(.error(ErrorReport(code: .authenticationFailed, scope: .connection, message: "bad cert")), now: 0)
        #expect(auth.contains(.closeConnection(reason: "\(ProtocolError.Code.authenticationFailed)")))
    }

    @Test func overflowDropsAreLoggedReportedAndAskForAKeyframe() {
        var m = AgentStateMachine(
            configuration: .init(agentID: "cam-a", bufferLimits: .init(maxBytes: 2 * 134, maxDuration: 1 << 60)),
            random: ScriptedRandom(values: [0]))
        _ = m.openSession(id: session, labels: [], tracks: tracks, now: 0)  // not connected: everything waits
        _ = m.enqueue(encoded(track: 1, pts: 0), now: 0)
        _ = m.enqueue(encoded(track: 1, pts: 1, keyframe: false), now: 0)
        let third = m.enqueue(encoded(track: 1, pts: 2, keyframe: false), now: 0)
        #expect(third.contains(.requestKeyframe(track: 1)))
        #expect(third.contains { if case .log(.warning, let text) = $0 { text.contains("dropped the oldest 1") } else { false } })
        _ = handshake(&m, now: 0)
        _ = m.received(.sessionAccepted(SessionAccepted(sessionID: session, acknowledged: 0)), now: 0)
        let sent = m.pump(now: 0)
        #expect(sent.sent.compactMap { if case .dropReport(let d) = $0 { d } else { nil } } == [DropReport(track: 1, reason: .queueOverflow, count: 1), DropReport(track: 1, reason: .queueOverflow, count: 2)])
        #expect(sent.contains { if case .log(.warning, let text) = $0 { text.contains("reporting") } else { false } })
    }
}

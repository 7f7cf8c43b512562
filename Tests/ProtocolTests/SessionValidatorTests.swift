import NIOCore
import Testing
import WireProtocol

private func sample(_ sequence: UInt64, track: UInt8 = 1) -> Message {
    .sample(Sample(track: track, sequence: sequence, pts: Int64(sequence), dts: Int64(sequence), duration: 1, data: ByteBuffer(bytes: [0, 0, 0, 1, 0x65])))
}

private let open = Fixtures.sessionOpen

/// A validator past the handshake with session "s1" (tracks 1 and 2) open.
private func established(openSession: Bool = true) throws -> SessionValidator {
    var v = SessionValidator()
    _ = try v.validate(Fixtures.hello)
    if openSession { _ = try v.validate(open) }
    return v
}

@Suite("Connection and session state (protocol.md §7)")
struct SessionValidatorTests {
    @Test("a normal session: hello, open, samples, track end, close")
    func happyPath() throws {
        var v = SessionValidator()
        #expect(try v.validate(Fixtures.hello) == .accept)
        #expect(v.negotiatedVersion == 1)
        #expect(try v.validate(Fixtures.heartbeat) == .accept)
        #expect(try v.validate(open) == .accept)
        #expect(v.sessionID == "s1")
        for seq in UInt64(1)...10 { #expect(try v.validate(sample(seq, track: seq % 2 == 0 ? 2 : 1)) == .accept) }
        #expect(try v.validate(.dropReport(DropReport(track: 1, reason: .queueOverflow, count: 2))) == .accept)
        #expect(try v.validate(.trackEnd(TrackEnd(track: 2, reason: .endOfStream))) == .accept)
        #expect(try v.validate(sample(11, track: 1)) == .accept)
        #expect(try v.validate(.sessionClose(SessionClose(sessionID: "s1", finalSequence: 11))) == .accept)
        #expect(v.sessionID == nil)
        // A second session on the same connection starts again at 1.
        #expect(try v.validate(open) == .accept)
        #expect(try v.validate(sample(1)) == .accept)
    }

    @Test("the handshake comes first")
    func handshakeFirst() {
        var v = SessionValidator()
        #expect(throws: ProtocolError(.handshakeRequired, "")) { try v.validate(open) }
        // The connection is finished after a connection-scoped error.
        #expect(throws: ProtocolError(.handshakeRequired, "")) { try v.validate(Fixtures.hello) }
    }

    @Test("no common version")
    func noCommonVersion() {
        var v = SessionValidator()
        let hello = Message.hello(Hello(versions: 2...3, agentID: "a", softwareVersion: ""))
        #expect(throws: ProtocolError(.noCommonVersion, "")) { try v.validate(hello) }
    }

    @Test("a second hello and server-only messages are unexpected")
    func unexpected() throws {
        var v = try established()
        #expect(throws: ProtocolError(.unexpectedMessage, "")) { try v.validate(Fixtures.hello) }
        for message in [Fixtures.helloReply, Fixtures.ack, Fixtures.sessionAccepted, Fixtures.sessionClosed, Fixtures.startSession, Fixtures.stopSession, Fixtures.cancelSession] {
            var w = try established()
            #expect(throws: ProtocolError(.unexpectedMessage, "")) { try w.validate(message) }
        }
    }

    @Test("sample before session open")
    func sampleBeforeOpen() throws {
        var v = try established(openSession: false)
        let error = #expect(throws: ProtocolError.self) { try v.validate(sample(1)) }
        #expect(error?.code == .noOpenSession)
        #expect(error?.scope == .connection)
    }

    @Test("track end and drop report before session open")
    func otherBeforeOpen() throws {
        for message in [Fixtures.trackEnd, Fixtures.dropReport, Fixtures.sessionClose, Fixtures.sessionCancel] {
            var v = try established(openSession: false)
            #expect(throws: ProtocolError(.noOpenSession, "")) { try v.validate(message) }
        }
    }

    @Test("unknown track")
    func unknownTrack() throws {
        var v = try established()
        let error = #expect(throws: ProtocolError.self) { try v.validate(sample(1, track: 9)) }
        #expect(error?.code == .unknownTrack)
        #expect(error?.scope == .session)
        // Session-scoped: the session is gone, the connection is still usable.
        #expect(v.sessionID == nil)
        #expect(try v.validate(open) == .accept)
        var w = try established()
        #expect(throws: ProtocolError(.unknownTrack, "")) { try w.validate(.trackEnd(TrackEnd(track: 7, reason: .error))) }
        var x = try established()
        #expect(throws: ProtocolError(.unknownTrack, "")) { try x.validate(.dropReport(DropReport(track: 7, reason: .other, count: 1))) }
    }

    @Test("non-monotonic sequence")
    func nonMonotonic() throws {
        var v = try established()
        _ = try v.validate(sample(1))
        _ = try v.validate(sample(2))
        let error = #expect(throws: ProtocolError.self) { try v.validate(sample(2)) }
        #expect(error?.code == .nonMonotonicSequence)
        #expect(error?.scope == .session)
        var w = try established()
        _ = try w.validate(sample(1))
        _ = try w.validate(sample(2))
        #expect(throws: ProtocolError(.nonMonotonicSequence, "")) { try w.validate(sample(1)) }
    }

    @Test("a gap in the sequence")
    func gap() throws {
        var v = try established()
        #expect(throws: ProtocolError(.sequenceGap, "")) { try v.validate(sample(2)) }
        var w = try established()
        _ = try w.validate(sample(1))
        #expect(throws: ProtocolError(.sequenceGap, "")) { try w.validate(sample(3)) }
    }

    @Test("samples after track end")
    func afterTrackEnd() throws {
        var v = try established()
        _ = try v.validate(.trackEnd(TrackEnd(track: 1, reason: .endOfStream)))
        #expect(throws: ProtocolError(.trackEnded, "")) { try v.validate(sample(1)) }
        var w = try established()
        _ = try w.validate(.trackEnd(TrackEnd(track: 1, reason: .endOfStream)))
        // Repeating a track end is harmless (it may be resent after a resume).
        #expect(try w.validate(.trackEnd(TrackEnd(track: 1, reason: .endOfStream))) == .dropDuplicate)
        #expect(throws: ProtocolError(.trackEnded, "")) { try w.validate(.dropReport(DropReport(track: 1, reason: .other, count: 1))) }
    }

    @Test("session already open")
    func alreadyOpen() throws {
        var v = try established()
        #expect(throws: ProtocolError(.sessionAlreadyOpen, "")) { try v.validate(open) }
        var w = try established()
        #expect(throws: ProtocolError(.sessionAlreadyOpen, "")) { try w.validate(Fixtures.sessionResume) }
    }

    @Test("too many tracks in a constructed message")
    func tooManyTracks() throws {
        var v = SessionValidator(limits: ProtocolLimits(maxTracksPerSession: 1))
        _ = try v.validate(Fixtures.hello)
        #expect(throws: ProtocolError(.tooManyTracks, "")) { try v.validate(open) }
    }

    @Test("close and cancel must name the open session; close must match the last sequence")
    func closeChecks() throws {
        var v = try established()
        #expect(throws: ProtocolError(.sessionMismatch, "")) { try v.validate(.sessionClose(SessionClose(sessionID: "other", finalSequence: 0))) }
        var w = try established()
        _ = try w.validate(sample(1))
        #expect(throws: ProtocolError(.finalSequenceMismatch, "")) { try w.validate(.sessionClose(SessionClose(sessionID: "s1", finalSequence: 2))) }
        var x = try established()
        #expect(throws: ProtocolError(.sessionMismatch, "")) { try x.validate(.sessionCancel(SessionCancel(sessionID: "s2", reason: ""))) }
        var y = try established()
        #expect(try y.validate(Fixtures.sessionCancel) == .accept)
        #expect(y.sessionID == nil)
    }

    @Test("resume: resent samples up to the highest received are duplicates, then new ones continue")
    func resume() throws {
        // Connection 1: samples 1...10 arrive, 1...7 are durable, then the connection drops.
        var first = try established()
        for seq in UInt64(1)...10 { _ = try first.validate(sample(seq)) }
        #expect(first.highestReceived == 10)

        // Connection 2: the agent resumes; the server remembers 10 received, 7 acknowledged.
        var v = try established(openSession: false)
        let resume = SessionResume(sessionID: "s1", lastAcknowledged: 6)
        #expect(try v.validate(.sessionResume(resume)) == .resumeRequested(resume))
        #expect(v.sessionID == "s1")
        v.resumeAccepted(.init(tracks: [Fixtures.video, Fixtures.audio], highestReceived: 10, acknowledged: 7))
        // The agent resends from 8 (SessionAccepted said 7).
        #expect(try v.validate(sample(8)) == .dropDuplicate)
        #expect(try v.validate(sample(9)) == .dropDuplicate)
        #expect(try v.validate(sample(10)) == .dropDuplicate)
        #expect(try v.validate(sample(11)) == .accept)
        #expect(try v.validate(sample(12, track: 2)) == .accept)
        #expect(try v.validate(.sessionClose(SessionClose(sessionID: "s1", finalSequence: 12))) == .accept)
    }

    @Test("resume: sequence at or below the acknowledged point is an error, samples before acceptance too")
    func resumeErrors() throws {
        var v = try established(openSession: false)
        _ = try v.validate(Fixtures.sessionResume)
        #expect(throws: ProtocolError(.noOpenSession, "")) { try v.validate(sample(8)) }

        var w = try established(openSession: false)
        _ = try w.validate(Fixtures.sessionResume)
        w.resumeAccepted(.init(tracks: [Fixtures.video], endedTracks: [2], highestReceived: 10, acknowledged: 7))
        #expect(throws: ProtocolError(.nonMonotonicSequence, "")) { try w.validate(sample(7)) }

        var x = try established(openSession: false)
        _ = try x.validate(Fixtures.sessionResume)
        x.resumeAccepted(.init(tracks: [Fixtures.video], highestReceived: 10, acknowledged: 7))
        #expect(try x.validate(sample(9)) == .dropDuplicate)
        // Going backwards within the resent range is still an error.
        #expect(throws: ProtocolError(.nonMonotonicSequence, "")) { try x.validate(sample(8)) }

        var y = try established(openSession: false)
        _ = try y.validate(Fixtures.sessionResume)
        y.resumeRejected()
        #expect(y.sessionID == nil)
        #expect(try y.validate(open) == .accept)
    }

    @Test("an error report from the agent ends what its scope says")
    func agentErrors() throws {
        var v = try established()
        #expect(try v.validate(.error(ErrorReport(code: .storageFailure, scope: .session, message: "disk"))) == .accept)
        #expect(v.sessionID == nil)
        #expect(try v.validate(open) == .accept)
        #expect(try v.validate(.error(ErrorReport(code: .shuttingDown, scope: .connection, message: ""))) == .accept)
        #expect(throws: ProtocolError(.shuttingDown, "")) { try v.validate(Fixtures.heartbeat) }
    }

    @Test("validating bytes end to end: parse then validate")
    func endToEnd() throws {
        var parser = MessageParser()
        var v = SessionValidator()
        parser.append(buffer(bytes(Vectors.hello) + bytes(Vectors.sessionOpen) + bytes(Vectors.sample) + bytes(Vectors.sample)))
        #expect(try v.validate(try #require(try parser.nextMessage())) == .accept)
        #expect(try v.validate(try #require(try parser.nextMessage())) == .accept)
        #expect(try v.validate(try #require(try parser.nextMessage())) == .accept)
        #expect(throws: ProtocolError(.nonMonotonicSequence, "")) { try v.validate(try #require(try parser.nextMessage())) }
    }
}

import NIOCore
import Testing
import WireProtocol

/// An agent's own Error ends what its scope says (protocol.md §6.5), with one exception: its
/// refusal of a StartSession (`sessionAlreadyOpen`, `captureFailed`) ends nothing.
@Suite struct AgentErrorTests {
    private func sample(_ sequence: UInt64) -> Message {
        .sample(Sample(track: 1, sequence: sequence, pts: Int64(sequence), dts: Int64(sequence), duration: 1, data: ByteBuffer(bytes: [0, 0, 0, 1, 0x65])))
    }

    private func recording() throws -> SessionValidator {
        var v = SessionValidator()
        _ = try v.validate(Fixtures.hello)
        _ = try v.validate(Fixtures.sessionOpen)
        _ = try v.validate(sample(1))
        return v
    }

    @Test(arguments: [ProtocolError.Code.sessionAlreadyOpen, .captureFailed])
    func refusingAStartSessionLeavesTheRecordingSessionOpen(_ code: ProtocolError.Code) throws {
        var v = try recording()
        let refusal = Message.error(ErrorReport(code: code, scope: .session, message: "refused"))
        #expect(try v.validate(refusal) == .accept)
        #expect(v.sessionID == "s1")
        #expect(try v.validate(sample(2)) == .accept, "the session's samples go on")
    }

    @Test func captureFailedIsASessionScopedRefusalOfTheCommandOnly() {
        #expect(ProtocolError.Code.captureFailed.rawValue == 0x003C)
        #expect(ProtocolError.Code.captureFailed.defaultScope == .session)
        #expect(ProtocolError.Code.captureFailed.refusesCommandOnly && ProtocolError.Code.sessionAlreadyOpen.refusesCommandOnly)
        #expect(!ProtocolError.Code.internalError.refusesCommandOnly)
        #expect("\(ProtocolError.Code.captureFailed)" == "captureFailed(0x003C)")
    }

    @Test func anotherSessionScopedErrorEndsTheSessionAndLateFramesAreIgnored() throws {
        var v = try recording()
        #expect(try v.validate(.error(ErrorReport(code: .internalError, scope: .session, message: "encoder failed"))) == .accept)
        #expect(v.sessionID == nil)
        #expect(try v.validate(sample(2)) == .ignoreEnded, "a sample already in flight is dropped, not a violation")
        #expect(try v.validate(Fixtures.sessionOpen) == .accept, "a new session may open on the same connection")
    }

    @Test func framesInFlightAfterAValidatorsOwnSessionErrorAreIgnored() throws {
        var v = try recording()
        var unknown = Sample(track: 9, sequence: 2, pts: 2, dts: 2, duration: 1, data: ByteBuffer(bytes: [0, 0, 0, 1, 0x65]))
        #expect(throws: ProtocolError(.unknownTrack, "")) { try v.validate(.sample(unknown)) }
        v.sessionEnded()  // what the server then does, as for any session-scoped error
        unknown.track = 1
        #expect(try v.validate(.sample(unknown)) == .ignoreEnded, "a late sample of the ended session is dropped")
        #expect(try v.validate(.sessionClose(SessionClose(sessionID: "s1", finalSequence: 2))) == .ignoreEnded)
    }
}

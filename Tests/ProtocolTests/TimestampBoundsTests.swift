import NIOCore
import Testing
import WireProtocol

/// A sample of track 1 with the given times.
private func timed(_ sequence: UInt64, pts: Int64, dts: Int64, duration: Int64 = 0) -> Message {
    .sample(Sample(track: 1, sequence: sequence, pts: pts, dts: dts, duration: duration, data: ByteBuffer(bytes: [0, 0, 0, 1, 0x65])))
}

/// A validator with session "s1" open, after a Hello offering `capabilities`.
private func opened(capabilities: Capabilities = .all) throws -> SessionValidator {
    var v = SessionValidator()
    _ = try v.validate(.hello(Hello(versions: 1...1, capabilities: capabilities, agentID: "cam-a", softwareVersion: "agent/1.0")))
    _ = try v.validate(Fixtures.sessionOpen)
    return v
}

/// The error `message` is refused with, after which the session has ended (session scope)
/// or the connection is finished (connection scope).
private func refusal(_ v: inout SessionValidator, _ message: Message) -> ProtocolError? {
    do {
        _ = try v.validate(message)
        return nil
    } catch {
        return error
    }
}

/// A validator that resumed session "s1" (tracks 1 and 2) after 3 received samples.
private func resumed(acknowledged: UInt64, firstDTS: Int64?) throws -> SessionValidator {
    var v = SessionValidator()
    _ = try v.validate(Fixtures.hello)
    _ = try v.validate(Fixtures.sessionResume)
    v.resumeAccepted(.init(tracks: [Fixtures.video, Fixtures.audio], highestReceived: 3, acknowledged: acknowledged, firstDTS: firstDTS))
    return v
}

private let second: Int64 = 1_000_000_000
private let start: Int64 = 5_000 * second

@Suite("Sample timestamp bounds (protocol.md §6.12)")
struct TimestampBoundsTests {
    @Test("the bounds are the design's: [0, 2^62), pts - dts and duration at most 10 s, 2^40 ns around the first dts")
    func constants() {
        #expect(SampleTimestampBounds.timestampCeiling == 4_611_686_018_427_387_904)
        #expect(SampleTimestampBounds.maxPresentationDelay == 10_000_000_000)
        #expect(SampleTimestampBounds.maxDuration == 10_000_000_000)
        #expect(SampleTimestampBounds.maxSessionSpan == 1_099_511_627_776)
    }

    @Test("samples at every bound are accepted")
    func atTheBounds() throws {
        var v = try opened()
        #expect(try v.validate(timed(1, pts: start, dts: start)) == .accept)
        #expect(try v.validate(timed(2, pts: start + 1 + 10 * second, dts: start + 1, duration: 10 * second)) == .accept)
        #expect(try v.validate(timed(3, pts: start + (1 << 40), dts: start + (1 << 40))) == .accept)
        #expect(try v.validate(timed(4, pts: start - (1 << 40), dts: start - (1 << 40))) == .accept)

        var w = try opened()
        #expect(try w.validate(timed(1, pts: (1 << 62) - 1, dts: (1 << 62) - 1)) == .accept)
        var x = try opened()
        #expect(try x.validate(timed(1, pts: 0, dts: 0)) == .accept)
    }

    /// Each case: a first sample that is fine, then the one that breaks a bound.
    static let violations: [(name: String, pts: Int64, dts: Int64, duration: Int64)] = [
        ("negative pts", -1, start, 0),
        ("negative dts", start, -1, 0),
        ("pts at 2^62", 1 << 62, start, 0),
        ("dts at 2^62", 1 << 62, 1 << 62, 0),
        ("pts = dts = Int64.min + 1e9 (the TrackStatistics trap)", .min + second, .min + second, 0),
        ("dts = Int64.min + 1e9, pts = now (the SegmentWriter:157 trap)", start, .min + second, 0),
        ("pts = Int64.max, dts = Int64.min (the SegmentWriter:205 trap)", .max, .min, 0),
        ("pts before dts", start, start + 1, 0),
        ("pts - dts over 10 s", start + 1 + 10 * second + 1, start + 1, 0),
        ("negative duration", start + 1, start + 1, -1),
        ("duration over 10 s", start + 1, start + 1, 10 * second + 1),
        ("dts more than 2^40 ns after the first", start + (1 << 40) + 1, start + (1 << 40) + 1, 0),
        ("dts more than 2^40 ns before the first", start - (1 << 40) - 1, start - (1 << 40) - 1, 0),
    ]

    @Test("a sample past a bound is timestampOutOfRange, session scope; the connection goes on", arguments: 0..<violations.count)
    func enforced(_ index: Int) throws {
        let c = Self.violations[index]
        var v = try opened()
        #expect(try v.validate(timed(1, pts: start, dts: start)) == .accept)
        let error = try #require(refusal(&v, timed(2, pts: c.pts, dts: c.dts, duration: c.duration)), "\(c.name)")
        #expect(error.code == .timestampOutOfRange, "\(c.name)")
        #expect(error.scope == .session, "\(c.name)")
        // The session has ended; the connection has not: a new session may be opened.
        #expect(v.sessionID == nil)
        #expect(try v.validate(Fixtures.sessionOpen) == .accept)
        #expect(try v.validate(timed(1, pts: start, dts: start)) == .accept)
    }

    @Test("the first sample of a session is bounded too, and sets the reference only when accepted")
    func firstSample() throws {
        var v = try opened()
        let error = try #require(refusal(&v, timed(1, pts: .max, dts: .min)))
        #expect(error.code == .timestampOutOfRange)
        #expect(error.scope == .session)
    }

    @Test("the first sample's dts survives a resume")
    func spanAfterResume() throws {
        var w = try resumed(acknowledged: 3, firstDTS: start + 1)
        #expect(try w.validate(timed(4, pts: start + 1 + (1 << 40), dts: start + 1 + (1 << 40))) == .accept)
        let error = try #require(refusal(&w, timed(5, pts: start + 2 + (1 << 40), dts: start + 2 + (1 << 40))))
        #expect(error.code == .timestampOutOfRange)
        #expect(error.scope == .session)
    }

    @Test("a resume point without the first dts takes the first sample after the resume as the reference")
    func resumeWithoutFirstDTS() throws {
        var w = try resumed(acknowledged: 3, firstDTS: nil)
        #expect(try w.validate(timed(4, pts: start, dts: start)) == .accept)
        #expect(try w.validate(timed(5, pts: start + (1 << 40), dts: start + (1 << 40))) == .accept)
        #expect(refusal(&w, timed(6, pts: start + (1 << 40) + 1, dts: start + (1 << 40) + 1))?.code == .timestampOutOfRange)
    }

    @Test("a resent duplicate is dropped unread, whatever its timestamps")
    func duplicatesUnread() throws {
        var w = try resumed(acknowledged: 1, firstDTS: start)
        #expect(try w.validate(timed(2, pts: .max, dts: .min)) == .dropDuplicate)
    }
}

@Suite("SessionResume needs the resume capability (protocol.md §6.1, §7.2)")
struct ResumeCapabilityTests {
    @Test("without it: unexpectedMessage, connection scope, and the connection is finished")
    func withoutCapability() throws {
        var v = SessionValidator()
        _ = try v.validate(.hello(Hello(versions: 1...1, capabilities: [.dropReports, .serverCommands], agentID: "cam-a", softwareVersion: "")))
        #expect(!v.negotiatedCapabilities.contains(.resume))
        let error = try #require(refusal(&v, Fixtures.sessionResume))
        #expect(error.code == .unexpectedMessage)
        #expect(error.scope == .connection)
        #expect(refusal(&v, Fixtures.heartbeat)?.code == .unexpectedMessage)
    }

    @Test("the server not offering it counts the same")
    func serverWithoutCapability() throws {
        var v = SessionValidator(serverCapabilities: [.dropReports])
        _ = try v.validate(Fixtures.hello)
        #expect(v.negotiatedCapabilities == [.dropReports])
        #expect(refusal(&v, Fixtures.sessionResume)?.scope == .connection)
    }

    @Test("with it, the resume is requested")
    func withCapability() throws {
        var v = SessionValidator()
        _ = try v.validate(Fixtures.hello)
        #expect(v.negotiatedCapabilities == Fixtures.versionOneCapabilities, "what both announced")
        #expect(try v.validate(Fixtures.sessionResume) == .resumeRequested(SessionResume(sessionID: "s1", lastAcknowledged: 41)))
    }
}

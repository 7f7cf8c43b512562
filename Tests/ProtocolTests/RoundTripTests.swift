import NIOCore
import Testing
import Shared
import WireProtocol

@Suite("Encode → parse round trips")
struct RoundTripTests {
    static let varied: [Message] = [
        .hello(Hello(versions: 1...3, capabilities: Capabilities(rawValue: 0xFFFF_FFFF), agentID: "Agent_01.b-c", softwareVersion: "ü 1.0 🎥", bearerToken: "secret-token")),
        .hello(Hello(versions: 2...2, capabilities: [], agentID: "x", softwareVersion: "")),
        .helloReply(HelloReply(serverID: "srv", softwareVersion: "1", limits: AnnouncedLimits(maxFramePayload: 1, maxTracksPerSession: 1, maxLabels: 0, maxStringBytes: 1, maxCodecConfigBytes: 1), heartbeatIntervalMillis: 1, idleTimeoutMillis: 0, resumeWindowMillis: 0)),
        .heartbeat(Heartbeat(nonce: .max, originTime: .min)),
        .heartbeatReply(HeartbeatReply(nonce: 0, originTime: -1, receiveTime: .max, transmitTime: .min)),
        .error(ErrorReport(code: ProtocolError.Code(rawValue: 0xBEEF), scope: .connection, message: "unknown code from a newer peer")),
        .sessionOpen(SessionOpen(
            sessionID: Identifier(stringLiteral: String(repeating: "z", count: 64)),
            labels: (0..<32).map { Label(Identifier(stringLiteral: "k\($0)"), "wert-\($0)-ä") },
            tracks: (0..<16).map { i in
                TrackDescriptor(
                    id: UInt8(200 + i), label: "cam \(i)",
                    format: .h264(H264Format(
                        width: 640, height: 480, rotation: [.none, .quarter, .half, .threeQuarters][i % 4],
                        sequenceParameterSets: [Fixtures.sps, [0x27, 0x64]], pictureParameterSets: [Fixtures.pps, [0x28], [0x68, 0x01]])))
            })),
        .sessionOpen(SessionOpen(sessionID: "only-audio", tracks: [
            TrackDescriptor(id: 0, label: "", format: .opus(OpusFormat(sampleRate: 16_000, channels: 2, opusHead: Array("OpusHead".utf8) + [1, 2] + [UInt8](repeating: 0, count: 9) + [1, 1, 0, 1]))),
        ])),
        .sessionResume(SessionResume(sessionID: "s", lastAcknowledged: 0)),
        .sessionAccepted(SessionAccepted(sessionID: "s", acknowledged: .max)),
        .sessionClose(SessionClose(sessionID: "s", finalSequence: 0)),
        .sessionCancel(SessionCancel(sessionID: "s", reason: "")),
        .sessionClosed(SessionClosed(sessionID: "s", outcome: .cancelled, durableSequence: 7)),
        .sample(Sample(track: 255, flags: [.keyframe, .discontinuity], sequence: .max, pts: -5, dts: -7, duration: 0, data: ByteBuffer())),
        .sample(Sample(track: 0, sequence: 1, pts: 0, dts: 0, duration: .max, data: ByteBuffer(repeating: 0xAB, count: 1 << 20))),
        .ack(Ack(sessionID: "s", sequence: 0)),
        .trackEnd(TrackEnd(track: 9, reason: .error, message: "camera unplugged")),
        .dropReport(DropReport(track: 3, reason: .other, count: .max)),
        .startSession(StartSession()),
        .startSession(StartSession(labels: [], startAt: 0)),
        .startSession(StartSession(labels: [], startAt: .max)),
        .stopSession(StopSession(sessionID: "0")),
        .stopSession(StopSession(sessionID: "0", stopAt: .max)),
        .cancelSession(CancelSession(sessionID: "s", reason: "no space left")),
    ]

    @Test("fixtures and edge values survive encode → parse", arguments: Fixtures.all.map(\.message) + varied)
    func roundTrip(message: Message) throws {
        let encoded = try encode(message)
        #expect(try parseOne(encoded) == message)
    }

    @Test("every defined error code survives encode → parse")
    func errorCodes() throws {
        for code in ProtocolError.Code.allDefined {
            let report = ErrorReport(ProtocolError(code, "x"))
            #expect(try parseOne(try encode(.error(report))) == .error(report))
            #expect(report.scope == code.defaultScope)
        }
        #expect(Set(ProtocolError.Code.allDefined.map(\.rawValue)).count == ProtocolError.Code.allDefined.count)
    }

    @Test("seeded random messages survive encode → parse")
    func randomMessages() throws {
        var rng = SplitMix64(seed: 0x5EED_0001)
        for _ in 0..<500 {
            let message = RandomMessages.make(using: &rng)
            #expect(try parseOne(try encode(message)) == message)
        }
    }

    @Test("the encoder refuses what the parser would reject and leaves the buffer unchanged")
    func encoderValidates() throws {
        var buffer = ByteBuffer(bytes: [1, 2, 3])
        let tooLong = Message.sessionCancel(SessionCancel(sessionID: "s", reason: String(repeating: "x", count: 1025)))
        #expect(throws: ProtocolError(.stringTooLong, "")) { try FrameEncoder().encode(tooLong, into: &buffer) }
        let badHead = Message.sessionOpen(SessionOpen(sessionID: "s", tracks: [
            TrackDescriptor(id: 1, label: "", format: .opus(OpusFormat(sampleRate: 48_000, channels: 2, opusHead: Fixtures.opusHead))),
        ]))
        #expect(throws: ProtocolError(.invalidCodecConfig, "")) { try FrameEncoder().encode(badHead, into: &buffer) }
        let noTracks = Message.sessionOpen(SessionOpen(sessionID: "s", tracks: []))
        #expect(throws: ProtocolError(.invalidField, "")) { try FrameEncoder().encode(noTracks, into: &buffer) }
        let big = Message.sample(Sample(track: 1, sequence: 1, pts: 0, dts: 0, duration: 0, data: ByteBuffer(repeating: 0, count: 8 * 1024 * 1024)))
        #expect(throws: ProtocolError(.frameTooLarge, "")) { try FrameEncoder().encode(big, into: &buffer) }
        #expect(Array(buffer.readableBytesView) == [1, 2, 3])
    }

    @Test("largest legal sample: payload exactly the frame limit")
    func largestSample() throws {
        let data = ByteBuffer(repeating: 7, count: ProtocolLimits.ceilingFramePayload - Sample.headerSize)
        let message = Message.sample(Sample(track: 1, sequence: 1, pts: 0, dts: 0, duration: 0, data: data))
        let encoded = try encode(message)
        #expect(encoded.count == 12 + ProtocolLimits.ceilingFramePayload)
        #expect(try parseOne(encoded) == message)
    }

    @Test("several frames in one buffer come out in order")
    func stream() {
        let result = parse(Fixtures.stream)
        #expect(result.error == nil)
        #expect(result.messages == Fixtures.all.map(\.message))
    }

    @Test("heartbeat arithmetic: round trip and clock offset")
    func heartbeatMath() {
        // t1 = 1.0 s (agent), t2 = 1.5 s and t3 = 1.5001 s (server), t4 = 1.0003 s (agent).
        let reply = HeartbeatReply(nonce: 1, originTime: 1_000_000_000, receiveTime: 1_500_000_000, transmitTime: 1_500_100_000)
        #expect(reply.roundTripTime(arrivalTime: 1_000_300_000) == 200_000)
        #expect(reply.clockOffset(arrivalTime: 1_000_300_000) == 499_900_000)
        let answer = HeartbeatReply(answering: Heartbeat(nonce: 1, originTime: 1_000_000_000), receiveTime: 1_500_000_000, transmitTime: 1_500_100_000)
        #expect(answer == reply)
    }

    @Test("version negotiation picks the highest common version")
    func negotiation() {
        #expect(ProtocolVersion.negotiate(agent: 1...1) == 1)
        #expect(ProtocolVersion.negotiate(agent: 1...5, server: 2...3) == 3)
        #expect(ProtocolVersion.negotiate(agent: 2...4, server: 1...1) == nil)
    }

    @Test("limits: announced values lower, never raise")
    func limits() {
        let announced = AnnouncedLimits(maxFramePayload: 1 << 20, maxTracksPerSession: 4, maxLabels: 8, maxStringBytes: 256, maxCodecConfigBytes: 1 << 30)
        let applied = ProtocolLimits.default.applying(announced)
        #expect(applied.maxFramePayload == 1 << 20)
        #expect(applied.maxTracksPerSession == 4)
        #expect(applied.maxCodecConfigBytes == 64 * 1024)
        #expect(ProtocolLimits.default.isWithinCeilings)
        #expect(ProtocolLimits.default.announced.isValid)
        #expect(!announced.isValid)
    }
}

/// Seeded generator of valid messages for round-trip tests.
enum RandomMessages {
    static func make(using rng: inout SplitMix64) -> Message {
        switch Int.random(in: 0..<18, using: &rng) {
        case 0: return .hello(Hello(versions: 1...UInt8.random(in: 1...9, using: &rng), capabilities: Capabilities(rawValue: .random(in: 0...UInt32.max, using: &rng)), agentID: id(&rng), softwareVersion: text(&rng), bearerToken: Bool.random(using: &rng) ? "t" + text(&rng) : nil))
        case 1: return .helloReply(HelloReply(version: .random(in: 1...255, using: &rng), capabilities: .all, serverID: id(&rng), softwareVersion: text(&rng), heartbeatIntervalMillis: .random(in: 1...60_000, using: &rng)))
        case 2: return .heartbeat(Heartbeat(nonce: .random(in: 0...UInt64.max, using: &rng), originTime: .random(in: Int64.min...Int64.max, using: &rng)))
        case 3: return .heartbeatReply(HeartbeatReply(nonce: 3, originTime: .random(in: 0...Int64.max, using: &rng), receiveTime: 2, transmitTime: -2))
        case 4: return .error(ErrorReport(code: ProtocolError.Code.allDefined.randomElement(using: &rng)!, scope: Bool.random(using: &rng) ? .session : .connection, message: text(&rng)))
        case 5: return .sessionOpen(SessionOpen(sessionID: id(&rng), labels: labels(&rng), tracks: (0..<Int.random(in: 1...16, using: &rng)).map { track(UInt8($0 * 3), &rng) }))
        case 6: return .sessionResume(SessionResume(sessionID: id(&rng), lastAcknowledged: .random(in: 0...UInt64.max, using: &rng)))
        case 7: return .sessionAccepted(SessionAccepted(sessionID: id(&rng), acknowledged: .random(in: 0...1000, using: &rng)))
        case 8: return .sessionClose(SessionClose(sessionID: id(&rng), finalSequence: .random(in: 0...1000, using: &rng)))
        case 9: return .sessionCancel(SessionCancel(sessionID: id(&rng), reason: text(&rng)))
        case 10: return .sessionClosed(SessionClosed(sessionID: id(&rng), outcome: Bool.random(using: &rng) ? .finalized : .cancelled, durableSequence: 5))
        case 11:
            let data = (0..<Int.random(in: 0...300, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            return .sample(Sample(track: .random(in: 0...255, using: &rng), flags: Sample.Flags(rawValue: .random(in: 0...3, using: &rng)), sequence: .random(in: 1...UInt64.max, using: &rng), pts: .random(in: Int64.min...Int64.max, using: &rng), dts: .random(in: -1000...1000, using: &rng), duration: .random(in: 0...Int64.max, using: &rng), data: ByteBuffer(bytes: data)))
        case 12: return .ack(Ack(sessionID: id(&rng), sequence: .random(in: 0...UInt64.max, using: &rng)))
        case 13: return .trackEnd(TrackEnd(track: .random(in: 0...255, using: &rng), reason: Bool.random(using: &rng) ? .endOfStream : .error, message: text(&rng)))
        case 14: return .dropReport(DropReport(track: 1, reason: [.queueOverflow, .encoderError, .captureError, .other].randomElement(using: &rng)!, count: .random(in: 1...UInt32.max, using: &rng)))
        case 15: return .startSession(StartSession(labels: labels(&rng), startAt: Bool.random(using: &rng) ? nil : .random(in: 0...Int64.max, using: &rng)))
        case 16: return .stopSession(StopSession(sessionID: id(&rng), stopAt: Bool.random(using: &rng) ? nil : .random(in: 0...Int64.max, using: &rng)))
        default: return .cancelSession(CancelSession(sessionID: id(&rng), reason: text(&rng)))
        }
    }

    static let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
    static let textPieces = ["a", "Z", " ", "é", "ß", "漢", "🎥", "\u{0}", "\n", "—"]

    static func id(_ rng: inout SplitMix64) -> Identifier {
        let first = alphabet[Int.random(in: 0..<62, using: &rng)]
        let rest = (0..<Int.random(in: 0...63, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! }
        return try! Identifier(validating: String([first] + rest))
    }

    static func text(_ rng: inout SplitMix64) -> String {
        (0..<Int.random(in: 0...40, using: &rng)).map { _ in textPieces.randomElement(using: &rng)! }.joined()
    }

    static func labels(_ rng: inout SplitMix64) -> [Label] {
        (0..<Int.random(in: 0...32, using: &rng)).map { i in Label(try! Identifier(validating: "k\(i)"), text(&rng)) }
    }

    static func track(_ id: UInt8, _ rng: inout SplitMix64) -> TrackDescriptor {
        if Bool.random(using: &rng) {
            let channels = UInt8.random(in: 1...8, using: &rng)
            var head = Fixtures.opusHead
            head[9] = channels
            return TrackDescriptor(id: id, label: text(&rng), timescale: 48_000, format: .opus(OpusFormat(sampleRate: .random(in: 1...192_000, using: &rng), channels: channels, opusHead: head)))
        }
        return TrackDescriptor(id: id, label: text(&rng), format: .h264(H264Format(width: .random(in: 1...7680, using: &rng), height: .random(in: 1...4320, using: &rng), rotation: [.none, .quarter, .half, .threeQuarters].randomElement(using: &rng)!, sequenceParameterSets: [Fixtures.sps], pictureParameterSets: [Fixtures.pps, Fixtures.pps])))
    }
}

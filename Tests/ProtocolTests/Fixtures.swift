import NIOCore
import WireProtocol

/// The messages the byte vectors in `Vectors` encode.
enum Fixtures {
    static let sps: [UInt8] = [0x67, 0x42, 0x00, 0x1F]
    static let pps: [UInt8] = [0x68, 0xCE, 0x3C, 0x80]
    /// RFC 7845 §5.1: "OpusHead", version 1, 1 channel, pre-skip 312, 48 kHz, gain 0, family 0.
    static let opusHead: [UInt8] = Array("OpusHead".utf8) + [0x01, 0x01, 0x38, 0x01, 0x80, 0xBB, 0x00, 0x00, 0x00, 0x00, 0x00]

    static let video = TrackDescriptor(
        id: 1, label: "cam0", timescale: 90_000,
        format: .h264(H264Format(width: 1920, height: 1080, rotation: .none, sequenceParameterSets: [sps], pictureParameterSets: [pps])))
    static let audio = TrackDescriptor(
        id: 2, label: "mic", timescale: 48_000, format: .opus(OpusFormat(sampleRate: 48_000, channels: 1, opusHead: opusHead)))

    /// The capabilities of protocol.md's first text: the vectors keep them (bit 3,
    /// scheduledCommands, came later; the scheduled StartSession/StopSession vectors show it).
    static let versionOneCapabilities: Capabilities = [.resume, .dropReports, .serverCommands]
    static let hello = Message.hello(Hello(versions: 1...1, capabilities: Self.versionOneCapabilities, agentID: "cam-a", softwareVersion: "agent/1.0"))
    static let helloReply = Message.helloReply(HelloReply(
        version: 1, capabilities: Self.versionOneCapabilities, serverID: "rec-1", softwareVersion: "server/1.0",
        limits: ProtocolLimits.default.announced, heartbeatIntervalMillis: 5_000, idleTimeoutMillis: 20_000, resumeWindowMillis: 300_000))
    static let heartbeat = Message.heartbeat(Heartbeat(nonce: 1, originTime: 1_000_000_000))
    static let heartbeatReply = Message.heartbeatReply(HeartbeatReply(nonce: 1, originTime: 1_000_000_000, receiveTime: 1_500_000_000, transmitTime: 1_500_100_000))
    static let error = Message.error(ErrorReport(code: .unknownTrack, scope: .session, message: "track 9"))
    static let sessionOpen = Message.sessionOpen(SessionOpen(sessionID: "s1", labels: [Label("room", "a")], tracks: [video, audio]))
    static let sessionResume = Message.sessionResume(SessionResume(sessionID: "s1", lastAcknowledged: 41))
    static let sessionAccepted = Message.sessionAccepted(SessionAccepted(sessionID: "s1", acknowledged: 40))
    static let sessionClose = Message.sessionClose(SessionClose(sessionID: "s1", finalSequence: 42))
    static let sessionCancel = Message.sessionCancel(SessionCancel(sessionID: "s1", reason: "operator"))
    static let sessionClosed = Message.sessionClosed(SessionClosed(sessionID: "s1", outcome: .finalized, durableSequence: 42))
    static let sample = Message.sample(Sample(
        track: 1, flags: .keyframe, sequence: 1, pts: 1_000_000_000, dts: 1_000_000_000, duration: 33_333_333,
        data: ByteBuffer(bytes: [0x00, 0x00, 0x00, 0x02, 0x65, 0x88])))
    static let ack = Message.ack(Ack(sessionID: "s1", sequence: 1))
    /// Sent only with ``Capabilities/remoteAcks``.
    static let remoteAck = Message.remoteAck(Ack(sessionID: "s1", sequence: 1))
    static let trackEnd = Message.trackEnd(TrackEnd(track: 2, reason: .endOfStream))
    static let dropReport = Message.dropReport(DropReport(track: 1, reason: .queueOverflow, count: 3))
    static let startSession = Message.startSession(StartSession(labels: [Label("take", "7")]))
    static let stopSession = Message.stopSession(StopSession(sessionID: "s1"))
    /// With ``Capabilities/scheduledCommands``: at an instant on the agent's clock.
    static let scheduledStartSession = Message.startSession(StartSession(labels: [], startAt: 10_000_000_000))
    static let scheduledStopSession = Message.stopSession(StopSession(sessionID: "s1", stopAt: 10_000_000_000))
    static let cancelSession = Message.cancelSession(CancelSession(sessionID: "s1", reason: "disk"))

    /// Every message paired with its annotated vector, in type order.
    static let all: [(name: String, message: Message, vector: String)] = [
        ("Hello", hello, Vectors.hello),
        ("HelloReply", helloReply, Vectors.helloReply),
        ("Heartbeat", heartbeat, Vectors.heartbeat),
        ("HeartbeatReply", heartbeatReply, Vectors.heartbeatReply),
        ("Error", error, Vectors.error),
        ("SessionOpen", sessionOpen, Vectors.sessionOpen),
        ("SessionResume", sessionResume, Vectors.sessionResume),
        ("SessionAccepted", sessionAccepted, Vectors.sessionAccepted),
        ("SessionClose", sessionClose, Vectors.sessionClose),
        ("SessionCancel", sessionCancel, Vectors.sessionCancel),
        ("SessionClosed", sessionClosed, Vectors.sessionClosed),
        ("Sample", sample, Vectors.sample),
        ("Ack", ack, Vectors.ack),
        ("TrackEnd", trackEnd, Vectors.trackEnd),
        ("DropReport", dropReport, Vectors.dropReport),
        ("RemoteAck", remoteAck, Vectors.remoteAck),
        ("StartSession", startSession, Vectors.startSession),
        ("StopSession", stopSession, Vectors.stopSession),
        ("StartSession (scheduled)", scheduledStartSession, Vectors.scheduledStartSession),
        ("StopSession (scheduled)", scheduledStopSession, Vectors.scheduledStopSession),
        ("CancelSession", cancelSession, Vectors.cancelSession),
    ]

    /// All vectors back to back: one stream of every message.
    static var stream: [UInt8] { all.flatMap { bytes($0.vector) } }
}

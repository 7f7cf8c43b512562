import CaptureAgentCore
import NIOCore
import NIOEmbedded
import Testing
import TestSupport
import WireProtocol
import WireProtocolNIO

/// The agent's protocol logic (``AgentStateMachine``) against the server's (``SessionValidator``)
/// without sockets, in the manner of swift-nio-ssl's `interactInMemory`: each link is two
/// `EmbeddedChannel`s with this module's handlers, and bytes are carried from one to the other
/// until neither has anything more to say.
@Suite("Agent and server protocol logic in conversation, in memory")
struct ConversationTests {
    static let sessionID: SessionID = "cam-a-s1"
    static let tracks = [
        TrackDescriptor(id: 1, label: "front", timescale: 90000, format: .h264(H264Format(
            width: 64, height: 48, sequenceParameterSets: [[0x67, 1]], pictureParameterSets: [[0x68, 1]]))),
        TrackDescriptor(id: 2, label: "mic", timescale: 48000, format: .opus(OpusFormat(
            sampleRate: 48000, channels: 1, opusHead: Array("OpusHead".utf8) + [1, 1, 0x38, 1, 0x80, 0xBB, 0, 0, 0, 0, 0]))),
    ]

    /// Sample `n` (from 0) of the session: video and audio in turn, each payload naming its index.
    static func media(_ n: Int) -> EncodedSample {
        let track: UInt8 = n % 2 == 0 ? 1 : 2
        let pts = Int64(n / 2) * 33_333_333
        return EncodedSample(track: track, pts: pts, dts: pts, duration: track == 1 ? 33_333_333 : 20_000_000,
                             isKeyframe: true, bytes: [UInt8(n), UInt8(n), UInt8(n)])
    }

    @Test("hello, open, samples and acks, a cut with samples lost in flight, resume, close: every sample stored once, all acknowledged")
    func sessionAcrossACut() throws {
        var agent = AgentEnd()
        var server = ServerEnd(tracks: Self.tracks)

        // First link: handshake, then the session opens.
        var link = Link()
        try link.connect(&agent, &server)
        #expect(agent.machine.isEstablished)
        #expect(server.received.first.map { if case .hello = $0 { true } else { false } } == true)
        try link.perform(agent.machine.openSession(id: Self.sessionID, labels: [Label("room", "a")], tracks: Self.tracks, now: agent.now),
                         &agent)
        try link.interact(&agent, &server)
        #expect(agent.machine.isSessionOpen)

        // Six samples arrive; the server makes four durable and says so.
        for n in 0..<6 { try link.perform(agent.machine.enqueue(Self.media(n), now: agent.now), &agent) }
        try link.perform(agent.machine.pump(now: agent.now), &agent)
        try link.interact(&agent, &server)
        #expect(server.stored.map(\.sequence) == Array(1...6))
        try link.serverSends(server.acknowledge(through: 4), &agent, &server)
        #expect(agent.machine.buffer?.acknowledged == 4)

        // Three more are written, then the link is cut before they reach the server.
        for n in 6..<9 { try link.perform(agent.machine.enqueue(Self.media(n), now: agent.now), &agent) }
        try link.perform(agent.machine.pump(now: agent.now), &agent)
        try link.cut(&agent, &server)
        #expect(server.stored.count == 6)
        #expect(agent.machine.buffer?.unacknowledgedCount == 5)
        #expect(!agent.machine.isEstablished)

        // Second link: Hello, then a resume from the ack point (never a second SessionOpen);
        // the agent resends 5...9, the server drops 5 and 6 as duplicates and stores 7...9.
        link = Link()
        try link.connect(&agent, &server)
        #expect(server.resumes == [SessionResume(sessionID: Self.sessionID, lastAcknowledged: 4)])
        #expect(server.opens == 1)
        #expect(agent.machine.isSessionOpen)
        #expect(server.duplicatesDropped == 2)
        #expect(server.stored.map(\.sequence) == Array(1...9))

        // Close: both tracks end, SessionClose carries the final sequence, the server
        // acknowledges everything and closes the session.
        for track: UInt8 in [1, 2] {
            try link.perform(agent.machine.endTrack(TrackEnd(track: track, reason: .endOfStream), now: agent.now), &agent)
        }
        try link.perform(agent.machine.requestClose(now: agent.now), &agent)
        try link.perform(agent.machine.pump(now: agent.now), &agent)
        try link.interact(&agent, &server)

        #expect(agent.acks == [4, 9])
        #expect(agent.finished == [SessionClosed(sessionID: Self.sessionID, outcome: .finalized, durableSequence: 9)])
        #expect(agent.machine.sessionID == nil)
        #expect(agent.closedConnections.isEmpty)
        #expect(server.validator?.sessionID == nil)
        #expect(server.endedTracks == [1, 2])
        // No sample lost, none stored twice, each byte for byte what was captured.
        #expect(server.stored.map(\.sequence) == Array(1...9))
        #expect(server.stored.map(\.data) == (0..<9).map { Self.media($0).data })
        #expect(server.stored.map(\.track) == (0..<9).map { Self.media($0).track })
    }
}

/// The agent's end: its state machine, its clock, and what its actions said.
struct AgentEnd {
    /// No reconnect jitter (always 0): the conversation does not depend on it.
    var machine = AgentStateMachine(configuration: .init(agentID: "cam-a", softwareVersion: "capture-agent/test"),
                                    random: ScriptedRandom(values: [0]))
    var now: Int64 = 1_000_000_000
    var acks: [UInt64] = []
    var finished: [SessionClosed] = []
    var closedConnections: [String] = []
}

/// A record-server's protocol end as the test needs it: a ``SessionValidator`` per connection
/// and, across connections, the session's samples (stored as they arrive) and its durable point.
struct ServerEnd {
    let tracks: [TrackDescriptor]
    var validator: SessionValidator?
    var received: [Message] = []
    var stored: [Sample] = []
    var durable: UInt64 = 0
    var duplicatesDropped = 0
    var opens = 0
    var resumes: [SessionResume] = []
    var endedTracks: Set<UInt8> = []

    init(tracks: [TrackDescriptor]) { self.tracks = tracks }

    /// What the server answers to one message from the agent.
    mutating func handle(_ message: Message) throws -> [Message] {
        received.append(message)
        let action = try validator!.validate(message)
        switch (message, action) {
        case (.hello(let hello), _):
            // Without remoteAcks, as record-server without object storage: its Acks free samples.
            let offered = Capabilities.all.subtracting(.remoteAcks)
            return [.helloReply(HelloReply(version: validator!.negotiatedVersion!, capabilities: hello.capabilities.intersection(offered),
                                           serverID: "rec-1", softwareVersion: "server/test"))]
        case (.sessionOpen(let open), _):
            opens += 1
            return [.sessionAccepted(SessionAccepted(sessionID: open.sessionID, acknowledged: 0))]
        case (.sessionResume(let resume), .resumeRequested):
            resumes.append(resume)
            validator!.resumeAccepted(SessionValidator.ResumePoint(
                tracks: tracks, endedTracks: endedTracks, highestReceived: UInt64(stored.count), acknowledged: durable,
                firstDTS: stored.first?.dts))
            return [.sessionAccepted(SessionAccepted(sessionID: resume.sessionID, acknowledged: durable))]
        case (.sample(let sample), .accept):
            stored.append(sample)
        case (.sample, .dropDuplicate):
            duplicatesDropped += 1
        case (.trackEnd(let end), .accept):
            endedTracks.insert(end.track)
        case (.sessionClose(let close), .accept):
            let closing = acknowledge(through: UInt64(stored.count))
            return closing + [.sessionClosed(SessionClosed(sessionID: close.sessionID, outcome: .finalized, durableSequence: durable))]
        default:
            break
        }
        return []
    }

    /// Samples through `sequence` are durable: the Ack that says so.
    mutating func acknowledge(through sequence: UInt64) -> [Message] {
        durable = sequence
        return [.ack(Ack(sessionID: ConversationTests.sessionID, sequence: sequence))]
    }
}

/// One connection: the agent's channel with ``MessageCodecHandler``, the server's with
/// ``MessageEncoderHandler`` and a ``MessageStreamDecoder``, as record-server decodes.
struct Link {
    let agentChannel = EmbeddedChannel(handler: MessageCodecHandler())
    let serverChannel = EmbeddedChannel(handler: MessageEncoderHandler())
    var serverDecoder = MessageStreamDecoder()

    /// The connection is up: the agent says Hello, and both talk until they are done.
    mutating func connect(_ agent: inout AgentEnd, _ server: inout ServerEnd) throws {
        server.validator = SessionValidator()
        try perform(agent.machine.connectionEstablished(now: agent.now), &agent)
        try interact(&agent, &server)
    }

    /// Carries what the agent does for `actions`: messages onto its channel, the rest noted.
    func perform(_ actions: [AgentStateMachine.Action], _ agent: inout AgentEnd) throws {
        for action in actions {
            switch action {
            case .send(let message): try agentChannel.writeOutbound(message)
            case .sessionFinished(let closed): agent.finished.append(closed)
            case .closeConnection(let reason): agent.closedConnections.append(reason)
            default: break
            }
        }
    }

    mutating func serverSends(_ messages: [Message], _ agent: inout AgentEnd, _ server: inout ServerEnd) throws {
        for message in messages { try serverChannel.writeOutbound(message) }
        try interact(&agent, &server)
    }

    /// Moves bytes both ways, and lets each side answer what it received, until both are quiet.
    mutating func interact(_ agent: inout AgentEnd, _ server: inout ServerEnd) throws {
        var quiet = false
        while !quiet {
            quiet = true
            while let bytes = try agentChannel.readOutbound(as: ByteBuffer.self) {
                quiet = false
                serverDecoder.append(bytes)
                while let message = try serverDecoder.nextMessage() {
                    for reply in try server.handle(message) { try serverChannel.writeOutbound(reply) }
                }
            }
            while let bytes = try serverChannel.readOutbound(as: ByteBuffer.self) {
                quiet = false
                try agentChannel.writeInbound(bytes)
            }
            while let message = try agentChannel.readInbound(as: Message.self) {
                quiet = false
                agent.now += 1_000_000
                if case .ack(let ack) = message { agent.acks.append(ack.sequence) }
                try perform(agent.machine.received(message, now: agent.now), &agent)
                try perform(agent.machine.pump(now: agent.now), &agent)
            }
        }
    }

    /// The network fails: whatever is in flight is lost, both ends see the connection go.
    mutating func cut(_ agent: inout AgentEnd, _ server: inout ServerEnd) throws {
        while try agentChannel.readOutbound(as: ByteBuffer.self) != nil {}
        while try serverChannel.readOutbound(as: ByteBuffer.self) != nil {}
        _ = try agentChannel.finish()
        _ = try serverChannel.finish()
        server.validator = nil
        agent.now += 1_000_000
        try perform(agent.machine.connectionLost(now: agent.now), &agent)
    }
}

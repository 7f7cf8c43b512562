import NIOCore

/// Every message of protocol version 1 (protocol.md §6).
public enum Message: Sendable, Hashable {
    case hello(Hello)
    case helloReply(HelloReply)
    case heartbeat(Heartbeat)
    case heartbeatReply(HeartbeatReply)
    case error(ErrorReport)
    case sessionOpen(SessionOpen)
    case sessionResume(SessionResume)
    case sessionAccepted(SessionAccepted)
    case sessionClose(SessionClose)
    case sessionCancel(SessionCancel)
    case sessionClosed(SessionClosed)
    case sample(Sample)
    case ack(Ack)
    case trackEnd(TrackEnd)
    case dropReport(DropReport)
    /// The second acknowledgement level (`remoteAcks` capability): durable beyond the server's host.
    case remoteAck(Ack)
    case startSession(StartSession)
    case stopSession(StopSession)
    case cancelSession(CancelSession)

    /// The header type byte for this message.
    public var type: MessageType {
        switch self {
        case .hello: .hello
        case .helloReply: .helloReply
        case .heartbeat: .heartbeat
        case .heartbeatReply: .heartbeatReply
        case .error: .error
        case .sessionOpen: .sessionOpen
        case .sessionResume: .sessionResume
        case .sessionAccepted: .sessionAccepted
        case .sessionClose: .sessionClose
        case .sessionCancel: .sessionCancel
        case .sessionClosed: .sessionClosed
        case .sample: .sample
        case .ack: .ack
        case .trackEnd: .trackEnd
        case .dropReport: .dropReport
        case .remoteAck: .remoteAck
        case .startSession: .startSession
        case .stopSession: .stopSession
        case .cancelSession: .cancelSession
        }
    }

    /// Decodes a complete frame's payload. The payload must be consumed exactly.
    public init(decoding frame: Frame, limits: ProtocolLimits = .default) throws(ProtocolError) {
        var payload = frame.payload
        self = try payload.readMessagePayload(type: frame.header.type, limits: limits)
    }
}

extension ByteBuffer {
    /// Decodes a whole payload of the given type; fails on trailing bytes.
    mutating func readMessagePayload(type: MessageType, limits: ProtocolLimits) throws(ProtocolError) -> Message {
        let message: Message
        switch type {
        case .hello: message = .hello(try readHello(limits: limits))
        case .helloReply: message = .helloReply(try readHelloReply(limits: limits))
        case .heartbeat: message = .heartbeat(try readHeartbeat())
        case .heartbeatReply: message = .heartbeatReply(try readHeartbeatReply())
        case .error: message = .error(try readErrorReport(limits: limits))
        case .sessionOpen: message = .sessionOpen(try readSessionOpen(limits: limits))
        case .sessionResume: message = .sessionResume(try readSessionResume())
        case .sessionAccepted: message = .sessionAccepted(try readSessionAccepted())
        case .sessionClose: message = .sessionClose(try readSessionClose())
        case .sessionCancel: message = .sessionCancel(try readSessionCancel(limits: limits))
        case .sessionClosed: message = .sessionClosed(try readSessionClosed())
        case .sample: message = .sample(try readSample())
        case .ack: message = .ack(try readAck())
        case .trackEnd: message = .trackEnd(try readTrackEnd(limits: limits))
        case .dropReport: message = .dropReport(try readDropReport())
        case .remoteAck: message = .remoteAck(try readRemoteAck())
        case .startSession: message = .startSession(try readStartSession(limits: limits))
        case .stopSession: message = .stopSession(try readStopSession())
        case .cancelSession: message = .cancelSession(try readCancelSession(limits: limits))
        default:
            throw ProtocolError(.unknownMessageType, "message type \(type) is not defined")
        }
        try expectFullyConsumed("payload")
        return message
    }

    mutating func writeMessagePayload(_ message: Message, limits: ProtocolLimits) throws(ProtocolError) {
        switch message {
        case .hello(let m): try writeHello(m, limits: limits)
        case .helloReply(let m): try writeHelloReply(m, limits: limits)
        case .heartbeat(let m): writeHeartbeat(m)
        case .heartbeatReply(let m): writeHeartbeatReply(m)
        case .error(let m): try writeErrorReport(m, limits: limits)
        case .sessionOpen(let m): try writeSessionOpen(m, limits: limits)
        case .sessionResume(let m): writeSessionResume(m)
        case .sessionAccepted(let m): writeSessionAccepted(m)
        case .sessionClose(let m): writeSessionClose(m)
        case .sessionCancel(let m): try writeSessionCancel(m, limits: limits)
        case .sessionClosed(let m): writeSessionClosed(m)
        case .sample(let m): writeSample(m)
        case .ack(let m), .remoteAck(let m): writeAck(m)
        case .trackEnd(let m): try writeTrackEnd(m, limits: limits)
        case .dropReport(let m): writeDropReport(m)
        case .startSession(let m): try writeStartSession(m, limits: limits)
        case .stopSession(let m): writeStopSession(m)
        case .cancelSession(let m): try writeCancelSession(m, limits: limits)
        }
    }
}

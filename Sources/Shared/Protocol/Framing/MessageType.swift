/// The message type byte of a frame header (protocol.md §6, table "Message types").
public struct MessageType: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let hello = MessageType(rawValue: 0x01)
    public static let helloReply = MessageType(rawValue: 0x02)
    public static let heartbeat = MessageType(rawValue: 0x03)
    public static let heartbeatReply = MessageType(rawValue: 0x04)
    public static let error = MessageType(rawValue: 0x05)
    public static let sessionOpen = MessageType(rawValue: 0x10)
    public static let sessionResume = MessageType(rawValue: 0x11)
    public static let sessionAccepted = MessageType(rawValue: 0x12)
    public static let sessionClose = MessageType(rawValue: 0x13)
    public static let sessionCancel = MessageType(rawValue: 0x14)
    public static let sessionClosed = MessageType(rawValue: 0x15)
    public static let sample = MessageType(rawValue: 0x20)
    public static let ack = MessageType(rawValue: 0x21)
    public static let trackEnd = MessageType(rawValue: 0x22)
    public static let dropReport = MessageType(rawValue: 0x23)
    /// Sent only when the `remoteAcks` capability is negotiated (protocol.md §6.13a).
    public static let remoteAck = MessageType(rawValue: 0x24)
    public static let startSession = MessageType(rawValue: 0x30)
    public static let stopSession = MessageType(rawValue: 0x31)
    public static let cancelSession = MessageType(rawValue: 0x32)

    /// Every type defined by protocol version 1 and who may send it.
    public static let known: [MessageType: Direction] = [
        .hello: .agentToServer, .helloReply: .serverToAgent, .heartbeat: .both,
        .heartbeatReply: .both, .error: .both, .sessionOpen: .agentToServer,
        .sessionResume: .agentToServer, .sessionAccepted: .serverToAgent,
        .sessionClose: .agentToServer, .sessionCancel: .agentToServer,
        .sessionClosed: .serverToAgent, .sample: .agentToServer, .ack: .serverToAgent,
        .trackEnd: .agentToServer, .dropReport: .agentToServer, .remoteAck: .serverToAgent, .startSession: .serverToAgent,
        .stopSession: .serverToAgent, .cancelSession: .serverToAgent,
    ]

    public var isKnown: Bool { MessageType.known[self] != nil }

    /// Who may send this type; nil for an unknown type.
    public var direction: Direction? { MessageType.known[self] }

    public var description: String {
        let hex = String(rawValue, radix: 16, uppercase: true)
        return "0x" + (hex.count < 2 ? "0" : "") + hex
    }

    /// Who may send a message.
    public enum Direction: Sendable, Hashable {
        case agentToServer, serverToAgent, both

        /// Whether a message with this direction may be sent by `sender`.
        public func allowsSender(_ sender: Peer) -> Bool {
            switch (self, sender) {
            case (.both, _), (.agentToServer, .agent), (.serverToAgent, .server): return true
            default: return false
            }
        }
    }
}

/// One end of a connection.
public enum Peer: Sendable, Hashable {
    case agent, server
}

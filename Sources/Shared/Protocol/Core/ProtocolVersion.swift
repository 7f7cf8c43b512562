/// Protocol versions and their negotiation (protocol.md §5 "Versions").
public enum ProtocolVersion {
    /// The version this implementation speaks.
    public static let current: UInt8 = 1
    /// The versions this implementation can speak.
    public static let supported: ClosedRange<UInt8> = 1...1

    /// The version both sides use: the highest version in both ranges, or nil if
    /// the ranges do not overlap (the server then answers `noCommonVersion`).
    public static func negotiate(agent: ClosedRange<UInt8>, server: ClosedRange<UInt8> = supported) -> UInt8? {
        let high = min(agent.upperBound, server.upperBound)
        let low = max(agent.lowerBound, server.lowerBound)
        return low <= high ? high : nil
    }
}

/// Optional features, as a bit set carried in ``Hello`` and ``HelloReply`` (protocol.md §6.1).
/// Unknown bits are ignored by the receiver; the reply carries the intersection.
public struct Capabilities: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Sessions can be resumed after a reconnect (``SessionResume``).
    public static let resume = Capabilities(rawValue: 1 << 0)
    /// The agent sends ``DropReport`` messages.
    public static let dropReports = Capabilities(rawValue: 1 << 1)
    /// The agent obeys server commands (``StartSession``, ``StopSession``, ``CancelSession``).
    public static let serverCommands = Capabilities(rawValue: 1 << 2)
    /// The agent starts and stops capture at an instant the server names on the agent's clock
    /// (``StartSession/startAt``, ``StopSession/stopAt``): what aligns the tracks of a session
    /// across agents. The server sends those fields only to an agent that announced this.
    public static let scheduledCommands = Capabilities(rawValue: 1 << 3)

    /// Two acknowledgement levels (protocol.md §6.13a): `Ack` says durable on the server's
    /// host, `RemoteAck` durable beyond it (object storage); the agent keeps every sample until
    /// the second, so that another server can continue the session if this one's host is lost.
    /// A server announces it only when it ships recordings to object storage.
    public static let remoteAcks = Capabilities(rawValue: 1 << 4)

    /// Every capability defined by this version.
    public static let all: Capabilities = [.resume, .dropReports, .serverCommands, .scheduledCommands, .remoteAcks]
}

import NIOCore

/// Server → agent, the answer to ``Hello`` (protocol.md §6.2). A server that cannot
/// accept the agent sends an ``ErrorReport`` instead and closes the connection.
public struct HelloReply: Sendable, Hashable {
    /// The negotiated version: the highest version both sides support.
    public var version: UInt8
    /// The capabilities both sides support.
    public var capabilities: Capabilities
    public var serverID: Identifier
    public var softwareVersion: String
    /// The server's limits; the agent must stay within them.
    public var limits: AnnouncedLimits
    /// How often each side should send a ``Heartbeat`` when otherwise idle.
    public var heartbeatIntervalMillis: UInt32
    /// A connection silent for this long is considered dead by the server.
    public var idleTimeoutMillis: UInt32
    /// How long the server keeps an interrupted session open for ``SessionResume``.
    public var resumeWindowMillis: UInt32

    public init(
        version: UInt8 = ProtocolVersion.current, capabilities: Capabilities = .all, serverID: Identifier,
        softwareVersion: String, limits: AnnouncedLimits = ProtocolLimits.default.announced,
        heartbeatIntervalMillis: UInt32 = 5_000, idleTimeoutMillis: UInt32 = 20_000, resumeWindowMillis: UInt32 = 300_000
    ) {
        self.version = version
        self.capabilities = capabilities
        self.serverID = serverID
        self.softwareVersion = softwareVersion
        self.limits = limits
        self.heartbeatIntervalMillis = heartbeatIntervalMillis
        self.idleTimeoutMillis = idleTimeoutMillis
        self.resumeWindowMillis = resumeWindowMillis
    }
}

extension ByteBuffer {
    mutating func readHelloReply(limits: ProtocolLimits) throws(ProtocolError) -> HelloReply {
        let version = try readWire("HelloReply.version", as: UInt8.self)
        guard version >= 1 else { throw .invalid("HelloReply.version", "0 is not a version") }
        let capabilities = Capabilities(rawValue: try readWire("HelloReply.capabilities", as: UInt32.self))
        let serverID = try readIdentifier("HelloReply.serverID")
        let software = try readUTF8("HelloReply.softwareVersion", max: limits.maxStringBytes)
        let announced = AnnouncedLimits(
            maxFramePayload: try readWire("HelloReply.maxFramePayload"),
            maxTracksPerSession: try readWire("HelloReply.maxTracksPerSession"),
            maxLabels: try readWire("HelloReply.maxLabels"),
            maxStringBytes: try readWire("HelloReply.maxStringBytes"),
            maxCodecConfigBytes: try readWire("HelloReply.maxCodecConfigBytes"))
        guard announced.isValid else {
            throw .invalid("HelloReply.limits", "announced limits are outside 1...ceiling: \(announced)")
        }
        let heartbeat = try readWire("HelloReply.heartbeatIntervalMillis", as: UInt32.self)
        guard heartbeat >= 1 else { throw .invalid("HelloReply.heartbeatIntervalMillis", "must be at least 1") }
        return HelloReply(
            version: version, capabilities: capabilities, serverID: serverID, softwareVersion: software,
            limits: announced, heartbeatIntervalMillis: heartbeat,
            idleTimeoutMillis: try readWire("HelloReply.idleTimeoutMillis"),
            resumeWindowMillis: try readWire("HelloReply.resumeWindowMillis"))
    }

    mutating func writeHelloReply(_ reply: HelloReply, limits: ProtocolLimits) throws(ProtocolError) {
        writeInteger(reply.version)
        writeInteger(reply.capabilities.rawValue)
        writeIdentifier(reply.serverID)
        try writeUTF8(reply.softwareVersion, "HelloReply.softwareVersion", max: limits.maxStringBytes)
        writeInteger(reply.limits.maxFramePayload)
        writeInteger(reply.limits.maxTracksPerSession)
        writeInteger(reply.limits.maxLabels)
        writeInteger(reply.limits.maxStringBytes)
        writeInteger(reply.limits.maxCodecConfigBytes)
        writeInteger(reply.heartbeatIntervalMillis)
        writeInteger(reply.idleTimeoutMillis)
        writeInteger(reply.resumeWindowMillis)
    }
}

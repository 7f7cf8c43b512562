import NIOCore

/// Agent → server, first message of a connection (protocol.md §6.1).
///
/// The agent's identity is established by its TLS client certificate; `agentID` is
/// the name it claims, which the server checks against the certificate, or against
/// `bearerToken` where deployments have no client certificates.
public struct Hello: Sendable, Hashable {
    /// The protocol versions the agent can speak (`minVersion...maxVersion`, both ≥ 1).
    public var versions: ClosedRange<UInt8>
    public var capabilities: Capabilities
    public var agentID: Identifier
    /// Free-form, e.g. "capture-agent 1.4.2".
    public var softwareVersion: String
    /// Sent as an empty string when absent.
    public var bearerToken: String?

    public init(
        versions: ClosedRange<UInt8> = ProtocolVersion.supported, capabilities: Capabilities = .all,
        agentID: Identifier, softwareVersion: String, bearerToken: String? = nil
    ) {
        self.versions = versions
        self.capabilities = capabilities
        self.agentID = agentID
        self.softwareVersion = softwareVersion
        self.bearerToken = bearerToken
    }
}

extension ByteBuffer {
    mutating func readHello(limits: ProtocolLimits) throws(ProtocolError) -> Hello {
        let minVersion = try readWire("Hello.minVersion", as: UInt8.self)
        let maxVersion = try readWire("Hello.maxVersion", as: UInt8.self)
        guard minVersion >= 1, minVersion <= maxVersion else {
            throw .invalid("Hello.minVersion", "version range \(minVersion)...\(maxVersion) is empty or contains 0")
        }
        let capabilities = Capabilities(rawValue: try readWire("Hello.capabilities", as: UInt32.self))
        let agentID = try readIdentifier("Hello.agentID")
        let software = try readUTF8("Hello.softwareVersion", max: limits.maxStringBytes)
        let token = try readUTF8("Hello.bearerToken", max: limits.maxTokenBytes)
        return Hello(
            versions: minVersion...maxVersion, capabilities: capabilities, agentID: agentID,
            softwareVersion: software, bearerToken: token.isEmpty ? nil : token)
    }

    mutating func writeHello(_ hello: Hello, limits: ProtocolLimits) throws(ProtocolError) {
        writeInteger(hello.versions.lowerBound)
        writeInteger(hello.versions.upperBound)
        writeInteger(hello.capabilities.rawValue)
        writeIdentifier(hello.agentID)
        try writeUTF8(hello.softwareVersion, "Hello.softwareVersion", max: limits.maxStringBytes)
        try writeUTF8(hello.bearerToken ?? "", "Hello.bearerToken", max: limits.maxTokenBytes)
    }
}

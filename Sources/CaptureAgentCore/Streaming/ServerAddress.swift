/// One record-server the agent may connect to.
public struct ServerAddress: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int
    /// Name given to the TLS handler (SNI and verification) for this address; nil for IP
    /// literals (`TLSConfigurations.handlerHostname(for:)` of the host).
    public var tlsHostname: String?

    public init(host: String, port: Int, tlsHostname: String?) {
        self.host = host
        self.port = port
        self.tlsHostname = tlsHostname
    }

    /// `HOST:PORT`, `[v6addr]:PORT`: as written in `--server`.
    public var description: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}

/// The servers of a fleet, tried in turn: every connection attempt (the first, and each one
/// after a failure or a loss) takes the next address, round robin.
///
/// Why not stay with a server that worked: the agent cannot tell a dead host from a slow one,
/// and the session's new owner is whichever server's takeover wins (protocol.md §6.13a). Simple
/// rotation reaches every server within one round, so it reaches the new owner too; a server
/// that answers `sessionBusy` for now is simply left for the next one.
struct ServerRotation: Sendable {
    let addresses: [ServerAddress]
    private var next = 0

    /// `addresses` must not be empty (settings are checked before the runtime exists).
    init(_ addresses: [ServerAddress]) {
        precondition(!addresses.isEmpty, "a rotation needs at least one server address")
        self.addresses = addresses
    }

    /// The address for this attempt, with its place in the list (1-based) for the log.
    mutating func nextAddress() -> (address: ServerAddress, position: Int) {
        let index = next
        next = (next + 1) % addresses.count
        return (addresses[index], index + 1)
    }
}

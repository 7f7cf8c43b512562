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
///
/// A server that refuses the agent for good (a certificate it does not trust, a wrong id) is
/// left out of the rotation from then on; the agent stops only once every server has refused
/// it. One misconfigured server in the list must not stop an agent the others would take.
struct ServerRotation: Sendable {
    let addresses: [ServerAddress]
    private var next = 0
    /// The index of the latest attempt's address.
    private var current = 0
    /// Why each address refused the agent, for those that did.
    private var refusals: [Int: String] = [:]

    /// `addresses` must not be empty (settings are checked before the runtime exists).
    init(_ addresses: [ServerAddress]) {
        precondition(!addresses.isEmpty, "a rotation needs at least one server address")
        self.addresses = addresses
    }

    /// The address for this attempt, with its place in the list (1-based) for the log; one
    /// that refused the agent is skipped while another has not.
    mutating func nextAddress() -> (address: ServerAddress, position: Int) {
        var index = next
        for step in 0 ..< addresses.count where refusals[(next + step) % addresses.count] == nil {
            index = (next + step) % addresses.count
            break
        }
        next = (index + 1) % addresses.count
        current = index
        return (addresses[index], index + 1)
    }

    /// The latest attempt's server refused the agent for good. Returns what to stop with once
    /// every server has (with one server: its own message), or nil while another may take it.
    mutating func refuseCurrent(because message: String) -> String? {
        refusals[current] = message
        guard refusals.count == addresses.count else { return nil }
        guard addresses.count > 1 else { return message }
        return "every server refused this agent: " + addresses.indices.map { "\(addresses[$0]): \(refusals[$0] ?? "")" }.joined(separator: "; ")
    }
}

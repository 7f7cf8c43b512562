import Foundation

/// Hosts for fleet tests: one network namespace per host, each with a veth into a bridge in
/// the test's own namespace, on `10.231.<subnet>.0/24` (the test's side is `.1`, host `k` is
/// `.(10 + k)`). A process runs "on" a host through `ip netns exec`, which execs it in place
/// (its pid is the process's, so SIGKILL reaches it). ``disconnect(_:)`` takes a host off the
/// network the way a power cut does: its peers hear nothing more, not even a reset.
///
/// Needs root and iproute2 (``canCreate``). Names carry the test process's pid, so parallel
/// test processes do not meet; ``remove()`` deletes everything it made.
public final class NetworkHosts: @unchecked Sendable {
    public let names: [String]
    public let bridgeAddress: String
    private let bridge: String
    private let subnet: Int
    private var removed = false

    /// Root and `ip`: what making namespaces needs.
    public static var canCreate: Bool {
        getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip")
    }

    public init(count: Int) throws {
        let pid = Int(getpid())
        subnet = 1 + pid % 250
        bridge = "mcbr\(pid % 100_000)"
        bridgeAddress = "10.231.\(subnet).1"
        names = (1...count).map { "mc\(pid)h\($0)" }
        try Self.ip(["link", "add", bridge, "type", "bridge"])
        try Self.ip(["addr", "add", "\(bridgeAddress)/24", "dev", bridge])
        try Self.ip(["link", "set", bridge, "up"])
        for (index, name) in names.enumerated() {
            let outside = vethName(index)
            try Self.ip(["netns", "add", name])
            try Self.ip(["link", "add", outside, "type", "veth", "peer", "name", "eth0", "netns", name])
            try Self.ip(["link", "set", outside, "master", bridge])
            try Self.ip(["link", "set", outside, "up"])
            try Self.ip(["-n", name, "addr", "add", "\(address(index))/24", "dev", "eth0"])
            try Self.ip(["-n", name, "link", "set", "eth0", "up"])
            try Self.ip(["-n", name, "link", "set", "lo", "up"])
        }
    }

    deinit { remove() }

    /// Host `index`'s address (0-based).
    public func address(_ index: Int) -> String { "10.231.\(subnet).\(11 + index)" }

    /// The command prefix that runs a program on host `index`.
    public func launcher(_ index: Int) -> [String] { ["/usr/sbin/ip", "netns", "exec", names[index]] }

    /// Host `index` leaves the network at once, as in a power cut: its link goes down.
    public func disconnect(_ index: Int) throws { try Self.ip(["link", "set", vethName(index), "down"]) }

    public func remove() {
        guard !removed else { return }
        removed = true
        // Best effort on the way out: each may be gone already (a namespace takes its veth along).
        for name in names { _ = try? runProcess("/usr/sbin/ip", ["netns", "del", name]) }
        _ = try? runProcess("/usr/sbin/ip", ["link", "del", bridge])
    }

    private func vethName(_ index: Int) -> String { "mcv\(Int(getpid()) % 100_000)h\(index + 1)" }

    private static func ip(_ arguments: [String]) throws {
        let output = try runProcess("/usr/sbin/ip", arguments)
        guard output.status == 0 else { throw ToolError.failed("ip " + arguments.joined(separator: " "), output) }
    }
}

import NIOCore

/// Agent → server: the agent dropped samples of a track before they got a sequence
/// number (protocol.md §6.15). The agent must never lose data silently: every drop is
/// reported, and the next sample of the track carries the `discontinuity` flag.
public struct DropReport: Sendable, Hashable {
    public enum Reason: UInt8, Sendable, Hashable {
        /// The send queue was full (server or network too slow).
        case queueOverflow = 1
        /// The encoder failed on or skipped these frames.
        case encoderError = 2
        /// The capture device lost frames.
        case captureError = 3
        case other = 4
    }

    public var track: UInt8
    public var reason: Reason
    /// Number of samples dropped, ≥ 1.
    public var count: UInt32

    public init(track: UInt8, reason: Reason, count: UInt32) {
        self.track = track
        self.reason = reason
        self.count = count
    }
}

extension ByteBuffer {
    mutating func readDropReport() throws(ProtocolError) -> DropReport {
        let track = try readWire("DropReport.track", as: UInt8.self)
        let raw = try readWire("DropReport.reason", as: UInt8.self)
        guard let reason = DropReport.Reason(rawValue: raw) else {
            throw .invalid("DropReport.reason", "\(raw) is not within 1...4")
        }
        let count = try readWire("DropReport.count", as: UInt32.self)
        guard count >= 1 else { throw .invalid("DropReport.count", "must be at least 1") }
        return DropReport(track: track, reason: reason, count: count)
    }

    mutating func writeDropReport(_ report: DropReport) {
        writeInteger(report.track)
        writeInteger(report.reason.rawValue)
        writeInteger(report.count)
    }
}

import NIOCore

/// Agent → server: a track will carry no more samples (protocol.md §6.14).
public struct TrackEnd: Sendable, Hashable {
    public enum Reason: UInt8, Sendable, Hashable {
        /// The source ended normally.
        case endOfStream = 1
        /// The source failed; `message` says why.
        case error = 2
    }

    public var track: UInt8
    public var reason: Reason
    public var message: String

    public init(track: UInt8, reason: Reason, message: String = "") {
        self.track = track
        self.reason = reason
        self.message = message
    }
}

extension ByteBuffer {
    mutating func readTrackEnd(limits: ProtocolLimits) throws(ProtocolError) -> TrackEnd {
        let track = try readWire("TrackEnd.track", as: UInt8.self)
        let raw = try readWire("TrackEnd.reason", as: UInt8.self)
        guard let reason = TrackEnd.Reason(rawValue: raw) else {
            throw .invalid("TrackEnd.reason", "\(raw) is not 1 (end of stream) or 2 (error)")
        }
        return TrackEnd(track: track, reason: reason, message: try readUTF8("TrackEnd.message", max: limits.maxStringBytes))
    }

    mutating func writeTrackEnd(_ message: TrackEnd, limits: ProtocolLimits) throws(ProtocolError) {
        writeInteger(message.track)
        writeInteger(message.reason.rawValue)
        try writeUTF8(message.message, "TrackEnd.message", max: limits.maxStringBytes)
    }
}

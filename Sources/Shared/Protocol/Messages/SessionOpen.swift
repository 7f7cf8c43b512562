import NIOCore

/// Agent → server: starts a session (protocol.md §6.6). The agent chooses the id and
/// keeps it across reconnects; it must be new to the server.
public struct SessionOpen: Sendable, Hashable {
    public var sessionID: SessionID
    public var labels: [Label]
    /// 1...maxTracksPerSession tracks with distinct ids.
    public var tracks: [TrackDescriptor]

    public init(sessionID: SessionID, labels: [Label] = [], tracks: [TrackDescriptor]) {
        self.sessionID = sessionID
        self.labels = labels
        self.tracks = tracks
    }
}

extension ByteBuffer {
    mutating func readSessionOpen(limits: ProtocolLimits) throws(ProtocolError) -> SessionOpen {
        let sessionID = try readIdentifier("SessionOpen.sessionID")
        let labels = try readLabels(limits: limits)
        let count = Int(try readWire("SessionOpen.trackCount", as: UInt8.self))
        guard count <= limits.maxTracksPerSession else {
            throw ProtocolError(.tooManyTracks, "\(count) tracks, at most \(limits.maxTracksPerSession)")
        }
        guard count >= 1 else { throw .invalid("SessionOpen.trackCount", "a session needs at least one track") }
        var tracks: [TrackDescriptor] = []
        tracks.reserveCapacity(count)
        for _ in 0..<count {
            let track = try readTrackDescriptor(limits: limits)
            guard !tracks.contains(where: { $0.id == track.id }) else {
                throw ProtocolError(.duplicateTrack, "track id \(track.id) appears twice")
            }
            tracks.append(track)
        }
        return SessionOpen(sessionID: sessionID, labels: labels, tracks: tracks)
    }

    mutating func writeSessionOpen(_ open: SessionOpen, limits: ProtocolLimits) throws(ProtocolError) {
        writeIdentifier(open.sessionID)
        try writeLabels(open.labels, limits: limits)
        guard open.tracks.count <= min(limits.maxTracksPerSession, Int(UInt8.max)) else {
            throw ProtocolError(.tooManyTracks, "\(open.tracks.count) tracks, at most \(limits.maxTracksPerSession)")
        }
        writeInteger(UInt8(open.tracks.count))
        for track in open.tracks { try writeTrackDescriptor(track, limits: limits) }
    }
}

/// Rebuilds a track's configuration from a `trak` we wrote, so recovery needs nothing but the file.
extension PreparedTrack {
    init(trak: TrackBox, creationTime: Int64) throws(MuxerError) {
        let id = trak.header.trackID
        guard let entry = trak.media.information.sampleTable.description.entries.first, let writer = TrackCodecs.writing(entry),
              let codec = try writer.configuration(from: entry) else {
            throw MuxerError(.notOurFile, "track \(id) has a codec this recorder does not write")
        }
        let m = trak.header.matrix.values
        let rotation = m[1] == 0x10000 && m[3] == -0x10000 ? 90 : m[0] == -0x10000 && m[4] == -0x10000 ? 180 : m[1] == -0x10000 && m[3] == 0x10000 ? 270 : 0
        let created = MovieBuilder.unixTime(trak.header.creationTime)
        try self.init(TrackConfiguration(id: trak.header.trackID, label: trak.media.handler.name, codec: codec, rotation: rotation,
                                         creationTime: created == creationTime ? nil : created))
    }
}

/// Rebuilds a track's configuration from a `trak` we wrote, so recovery needs nothing but the file.
extension PreparedTrack {
    init(trak: TrackBox, creationTime: Int64) throws(MuxerError) {
        let entry = trak.media.information.sampleTable.description.entries.first
        let codec: TrackConfiguration.Codec
        switch entry {
        case let .avc(avc1)?:
            guard let sps = avc1.configuration.sequenceParameterSets.first, let pps = avc1.configuration.pictureParameterSets.first else {
                throw MuxerError(.notOurFile, "avcC without parameter sets")
            }
            codec = .h264(sps: sps, pps: pps)
        case let .opus(opus)?:
            let d = opus.specific
            codec = .opus(OpusHead(channelCount: d.outputChannelCount, preSkip: d.preSkip, inputSampleRate: d.inputSampleRate,
                                   outputGain: d.outputGain, channelMappingFamily: d.channelMappingFamily, channelMappingTable: d.channelMappingTable))
        default:
            throw MuxerError(.notOurFile, "track \(trak.header.trackID) has a codec this recorder does not write")
        }
        let m = trak.header.matrix.values
        let rotation = m[1] == 0x10000 && m[3] == -0x10000 ? 90 : m[0] == -0x10000 && m[4] == -0x10000 ? 180 : m[1] == -0x10000 && m[3] == 0x10000 ? 270 : 0
        let created = MovieBuilder.unixTime(trak.header.creationTime)
        try self.init(TrackConfiguration(id: trak.header.trackID, label: trak.media.handler.name, codec: codec, rotation: rotation,
                                         creationTime: created == creationTime ? nil : created))
    }
}

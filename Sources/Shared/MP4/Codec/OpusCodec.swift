/// Opus in MP4 ("Encapsulation of Opus in ISO Base Media File Format"): an `Opus` entry
/// carrying `dOps` (the OpusHead's fields), one packet per sample, every packet a sync sample
/// (so no `stss`), the pre-skip hidden by the edit list (§4.2) and a roll group for the
/// pre-roll a decoder needs after a seek (§4.4).
struct OpusCodec: TrackCodec {
    static let name = CodecName.opus
    static let kind = MediaKind.audio
    static let sampleEntryType = OpusSampleEntry.boxType
    /// 48 kHz, mandated by the Opus mapping whatever the input rate.
    static let timescale: UInt32 = 48000
    static let syncSamples = SyncSampleRule.everySample
    static let nominalSampleTicks: Int64 = 960

    let head: OpusHead
    let sampleEntry: SampleEntry
    var width: Int { 0 }
    var height: Int { 0 }
    var primingTicks: Int { Int(head.preSkip) }

    init(head: OpusHead) {
        self.head = head
        sampleEntry = .opus(OpusSampleEntry(specific: OpusSpecificBox(head: head)))
    }

    static func configuration(from entry: SampleEntry) throws(MuxerError) -> TrackConfiguration.Codec? {
        guard case let .opus(opus) = entry else { return nil }
        let d = opus.specific
        return .opus(OpusHead(channelCount: d.outputChannelCount, preSkip: d.preSkip, inputSampleRate: d.inputSampleRate,
                              outputGain: d.outputGain, channelMappingFamily: d.channelMappingFamily, channelMappingTable: d.channelMappingTable))
    }

    /// A packet is stored as it is, and every one is a sync sample.
    func prepare(_ sample: MuxerSample, track: UInt32) throws(MuxerError) -> (payload: [UInt8], isSync: Bool) {
        (sample.data, true)
    }

    func rollGroup(for table: TrackTable) -> (description: RollGroupDescriptionBox, mapping: SampleToGroupBox)? {
        Self.rollGroup(table)
    }

    /// Opus decoders need 80 ms of pre-roll after a seek (§4.4): a roll group with the
    /// distance in packets; the first packets have nothing before them to roll from.
    static func rollGroup(_ table: TrackTable) -> (description: RollGroupDescriptionBox, mapping: SampleToGroupBox)? {
        let packetTicks = Int(table.durations.first ?? 960)
        guard packetTicks > 0 else { return nil }
        let distance = (3840 + packetTicks - 1) / packetTicks
        let n = table.sampleCount
        guard n > distance else { return nil }
        return (RollGroupDescriptionBox(rollDistance: Int16(-distance)),
                SampleToGroupBox(entries: [.init(sampleCount: UInt32(distance), groupDescriptionIndex: 0),
                                           .init(sampleCount: UInt32(n - distance), groupDescriptionIndex: 1)]))
    }
}

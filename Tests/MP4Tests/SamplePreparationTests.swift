import TestSupport
@testable import MP4
import Testing

@Suite("Sample preparation")
struct SamplePreparationTests {
    static let maxSize = 1 << 20

    func prepare(_ sample: MuxerSample, video: Bool = true, maxSampleSize: Int = maxSize) throws(MuxerError) -> PreparedSample {
        let track = video ? try Fixtures.videoTrack() : try Fixtures.audioTrack()
        return try SamplePreparation.prepare(sample, trackIndex: video ? 0 : 1, track: track, maxSampleSize: maxSampleSize)
    }

    @Test("Annex B in, length-prefixed out; AUD, SPS and PPS removed; IDR makes it sync")
    func annexBKeyframe() throws {
        let aud: [UInt8] = [0x09, 0xF0]
        let sei: [UInt8] = [0x06, 0x05, 0x01, 0xAA, 0x80]
        let idr = idrSlice(40)
        let input = annexB([aud, X264.sps720p, X264.pps720p, sei, idr])
        let out = try prepare(MuxerSample(trackID: 1, sequence: 9, pts: 2_000, dts: 1_000, duration: 33_333_333,
                                          isKeyframe: false, data: input))
        #expect(out.payload == [
            0x00, 0x00, 0x00, 0x05,  // length 5
        ] + sei + [                  // SEI kept
            0x00, 0x00, 0x00, 0x28,  // length 40
        ] + idr)                     // the IDR slice
        #expect(out.isSync)          // IDR in the bitstream, whatever the caller said
        #expect(out.trackIndex == 0)
        #expect(out.sequence == 9)
        #expect(out.pts == 2_000)
        #expect(out.dts == 1_000)
        #expect(out.duration == 33_333_333)
    }

    @Test("length-prefixed non-IDR passes through unchanged; a keyframe flag is kept")
    func lengthPrefixedPassThrough() throws {
        let input = lengthPrefixed([pSlice(20), pSlice(12, fill: 0x11)])
        let delta = try prepare(MuxerSample(trackID: 1, sequence: 1, pts: 0, isKeyframe: false, data: input))
        #expect(delta.payload == input)
        #expect(!delta.isSync)
        let recoveryPoint = try prepare(MuxerSample(trackID: 1, sequence: 2, pts: 0, isKeyframe: true, data: input))
        #expect(recoveryPoint.isSync)
    }

    @Test("a length-prefixed access unit with nothing to drop is kept as it came, not copied")
    func lengthPrefixedIsNotCopied() throws {
        let input = lengthPrefixed([pSlice(300), pSlice(70_000, fill: 0x22), pSlice(2)])
        let out = try prepare(MuxerSample(trackID: 1, sequence: 1, pts: 0, isKeyframe: false, data: input))
        #expect(out.payload == input)
        let same = input.withUnsafeBufferPointer { a in out.payload.withUnsafeBufferPointer { b in a.baseAddress == b.baseAddress } }
        #expect(same, "the payload is the sample's own storage")
    }

    @Test("Annex B with 4-byte start codes is rewritten even where its layout matches length prefixes")
    func annexBStartCodesAreNotTakenForLengths() throws {
        // Ranges at 4, then 4 bytes after each unit: only the prefix bytes tell start codes
        // (00 00 00 01) from lengths.
        let input = annexB([idrSlice(40), pSlice(9)])
        let out = try prepare(MuxerSample(trackID: 1, sequence: 1, pts: 0, isKeyframe: true, data: input))
        #expect(out.payload == lengthPrefixed([idrSlice(40), pSlice(9)]))
    }

    @Test("in-band parameter sets equal to the track's are dropped silently")
    func identicalInBandParameterSets() throws {
        let input = lengthPrefixed([X264.sps720p, X264.pps720p, idrSlice(16)])
        let out = try prepare(MuxerSample(trackID: 1, sequence: 1, pts: 0, isKeyframe: true, data: input))
        #expect(out.payload == lengthPrefixed([idrSlice(16)]))
    }

    @Test("in-band SPS or PPS that differs from avcC is a configuration change")
    func differingParameterSets() {
        expectMuxerError(.codecConfigurationChanged) {
            try prepare(MuxerSample(trackID: 1, sequence: 1, pts: 0, isKeyframe: true,
                                    data: annexB([X264.sps1080p, X264.pps720p, idrSlice()])))
        }
        expectMuxerError(.codecConfigurationChanged) {
            try prepare(MuxerSample(trackID: 1, sequence: 1, pts: 0, isKeyframe: true,
                                    data: annexB([X264.sps720p, X264.pps240p, idrSlice()])))
        }
    }

    @Test("rejections: empty, oversized, PTS before DTS, negative duration, no slice, bad framing")
    func rejections() throws {
        expectMuxerError(.emptySample) { try prepare(MuxerSample(trackID: 1, sequence: 1, pts: 0, isKeyframe: true, data: [])) }
        expectMuxerError(.emptySample) { try prepare(MuxerSample(trackID: 3, sequence: 1, pts: 0, isKeyframe: true, data: []), video: false) }

        let hundred = lengthPrefixed([idrSlice(96)])
        #expect(hundred.count == 100)
        #expect(try prepare(MuxerSample(trackID: 1, sequence: 1, pts: 0, isKeyframe: true, data: hundred), maxSampleSize: 100).payload == hundred)
        expectMuxerError(.sampleTooLarge) {
            try prepare(MuxerSample(trackID: 1, sequence: 1, pts: 0, isKeyframe: true, data: hundred), maxSampleSize: 99)
        }

        expectMuxerError(.presentationBeforeDecode) {
            try prepare(MuxerSample(trackID: 1, sequence: 1, pts: 999, dts: 1_000, isKeyframe: true, data: lengthPrefixed([idrSlice()])))
        }
        expectMuxerError(.malformedSample) {
            try prepare(MuxerSample(trackID: 1, sequence: 1, pts: 0, duration: -1, isKeyframe: true, data: lengthPrefixed([idrSlice()])))
        }
        // Only an SEI and an AUD: no picture.
        expectMuxerError(.malformedSample) {
            try prepare(MuxerSample(trackID: 1, sequence: 1, pts: 0, isKeyframe: true, data: annexB([[0x09, 0xF0], [0x06, 0x05, 0x01, 0xAA, 0x80]])))
        }
        // Parameter sets only.
        expectMuxerError(.malformedSample) {
            try prepare(MuxerSample(trackID: 1, sequence: 1, pts: 0, isKeyframe: true, data: annexB([X264.sps720p, X264.pps720p])))
        }
        // Length prefix longer than the sample.
        expectMuxerError(.malformedSample) {
            try prepare(MuxerSample(trackID: 1, sequence: 1, pts: 0, isKeyframe: true, data: [0x00, 0x00, 0x10, 0x00, 0x65, 0x88]))
        }
    }

    @Test("a length-prefixed 300-byte slice is accepted as is")
    func lengthPrefixedMidSizeSlice() throws {
        let input = lengthPrefixed([pSlice(300)])
        let out = try prepare(MuxerSample(trackID: 1, sequence: 1, pts: 0, isKeyframe: false, data: input))
        #expect(out.payload == input)
    }

    @Test("Opus packets pass through and are always sync samples")
    func opusPassThrough() throws {
        let packet: [UInt8] = [0xFC, 0xFF, 0xFE, 0x01, 0x02]  // TOC byte + frame data
        let out = try prepare(MuxerSample(trackID: 3, sequence: 4, pts: 20_000_000, duration: 20_000_000, isKeyframe: false, data: packet),
                              video: false)
        #expect(out.payload == packet)
        #expect(out.isSync)
        #expect(out.trackIndex == 1)
        #expect(out.dts == 20_000_000)  // dts defaults to pts
    }
}

@Suite("Track configuration validation")
struct PreparedTrackTests {
    @Test("video track derives size and avc1 from the SPS; audio uses 48 kHz and the pre-skip")
    func derived() throws {
        let video = try Fixtures.videoTrack(rotation: 90)
        #expect(video.width == 1280 && video.height == 720)
        #expect(video.timescale == 90000)
        #expect(video.sampleEntry == .avc(Fixtures.avc1))
        let audio = try Fixtures.audioTrack()
        #expect(audio.timescale == 48000)
        #expect(audio.preSkip == 312)
        #expect(audio.sampleEntry == .opus(Fixtures.opus))
    }

    @Test("invalid configurations are refused")
    func invalid() {
        let h264 = TrackConfiguration.Codec.h264(sps: X264.sps720p, pps: X264.pps720p)
        expectMuxerError(.invalidConfiguration) { try PreparedTrack(TrackConfiguration(id: 0, label: "a", codec: h264)) }
        expectMuxerError(.invalidConfiguration) { try PreparedTrack(TrackConfiguration(id: 1, label: "a", codec: h264, rotation: 45)) }
        expectMuxerError(.invalidConfiguration) {
            try PreparedTrack(TrackConfiguration(id: 1, label: String(repeating: "é", count: 128), codec: h264))  // 256 bytes
        }
        expectMuxerError(.invalidConfiguration) {
            try PreparedTrack(TrackConfiguration(id: 1, label: "a", codec: .h264(sps: X264.pps720p, pps: X264.pps720p)))
        }
        expectMuxerError(.invalidConfiguration) {
            try PreparedTrack(TrackConfiguration(id: 1, label: "a", codec: .h264(sps: X264.sps720p, pps: X264.sps720p)))
        }
    }
}

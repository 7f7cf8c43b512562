import Foundation
import Testing

/// The bench's own measurements on signals made here, so that a bench failure means the
/// recording and not the analysis (these run without the VM).
@Suite("Hardware bench: audio analysis on synthetic signals")
struct AudioAnalysisTests {
    /// A 100 ms 3 kHz beep at the start of every second of a 4 s signal, the signal beginning
    /// `offset` samples into the first second (as a recording that starts at any moment).
    static func beeps(startingAt offset: Int) -> [Double] {
        let rate = DecodedAudio.rate
        return (offset..<(offset + 4 * rate)).map { n in
            n % rate < rate / 10 ? 0.5 * cos(2 * Double.pi * 3000 * Double(n) / Double(rate)) : 0
        }
    }

    @Test func beepOnsetsAreWhereTheBeepsBegin() {
        let onsets = DecodedAudio.beepOnsets(Self.beeps(startingAt: 12_000), frequency: 3000)
        // The source's beeps begin at 48000, 96000, 144000 and 192000 (a cosine: its first
        // sample is at full amplitude).
        #expect(onsets.map { $0 + 12_000 } == [48_000, 96_000, 144_000, 192_000])
    }

    @Test func aBeepAlreadySoundingWhenTheAudioBeginsIsNoOnset() {
        // The audio begins 60 ms into a beep: its first loud sample is no onset, and the
        // spacings stay one second (the failure this guards: 45119, 48000, …).
        let onsets = DecodedAudio.beepOnsets(Self.beeps(startingAt: 2_880), frequency: 3000)
        #expect(onsets.first == 48_000 - 2_880)
        #expect(zip(onsets, onsets.dropFirst()).allSatisfy { $1 - $0 == 48_000 })
        #expect(onsets.count == 4)
    }

    /// Packets the agent dropped leave the decoded audio that many 960-sample packets short
    /// between two beeps; a capture that lost a period without a gap in the timestamps is
    /// still a short spacing where none is expected (the failure of CI runs whose encoder
    /// fell behind: 42241 and 35520 with 6 and 13 packets dropped between the beeps).
    @Test func spacingsAllowForPacketsDroppedBetweenTheBeeps() {
        let gaps = [PacketGap(packetsBefore: 60, missing: 6), PacketGap(packetsBefore: 110, missing: 13)]
        #expect(PacketGap.expectedSpacing(from: 10_000, to: 62_000, gaps: gaps, margin: 1_920) == 48_000 - 6 * 960)
        #expect(PacketGap.expectedSpacing(from: 62_000, to: 110_000, gaps: gaps, margin: 1_920) == 48_000 - 13 * 960)
        #expect(PacketGap.expectedSpacing(from: 10_000, to: 140_000, gaps: gaps, margin: 1_920) == 48_000 - 19 * 960)
        #expect(PacketGap.expectedSpacing(from: 120_000, to: 168_000, gaps: gaps, margin: 1_920) == 48_000, "no gap between")
        #expect(PacketGap.expectedSpacing(from: 58_000, to: 106_000, gaps: gaps, margin: 1_920) == nil, "a gap at the first beep")
        #expect(PacketGap.expectedSpacing(from: 10_000, to: 104_700, gaps: gaps, margin: 1_920) == nil, "a gap at the second beep")
    }
}

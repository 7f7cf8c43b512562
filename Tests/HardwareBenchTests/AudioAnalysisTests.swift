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
}

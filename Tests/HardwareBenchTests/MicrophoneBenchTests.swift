import Foundation
import Testing
import TestSupport

/// The microphone on real ALSA drivers (scenario `microphones`): snd-aloop captured through
/// `hw:`, `plughw:` (from a 44.1 kHz stream, to mono) and `dsnoop`, and snd-dummy. The signal
/// played into the loopback (scripts/hardware-test.sh) is a 1 kHz tone at half scale on the
/// left and a 100 ms 3 kHz beep at the start of every second on the right.
@Suite("Hardware bench: microphones on snd-aloop and snd-dummy", .serialized,
       .enabled(if: BenchResults.enabled, "needs HARDWARE_BENCH_RESULTS from scripts/hardware-test.sh (scripts/test.sh runs it)"))
struct MicrophoneBenchTests {
    static let toneHz = 1000.0
    static let beepHz = 3000.0
    /// RMS of a half-scale sine: 20·log10(0.5/√2).
    static let toneDecibels = -9.03

    /// The recording runs from its earliest track's first sample to its latest track's end.
    /// Every track ends within one 20 ms packet of that end (the agent stops every source at
    /// one instant, each at its next unit) and starts within two packets of its start (the
    /// agent starts every device at one moment; a driver such as snd-dummy moves its position
    /// a period at a time, so a first timestamp may be a packet off); its packets follow each
    /// other without a gap.
    func checkContinuity(_ probe: ProbeResult, label: String, scenario: BenchScenario) throws -> [PacketGap] {
        let stream = try #require(probe.stream(label: label), "no track \(label)")
        #expect(stream.codecName == "opus")
        let span = try #require(probe.span(of: stream))
        let spans = probe.streams.compactMap { probe.span(of: $0) }
        let start = try #require(spans.map(\.start).min()), end = try #require(spans.map(\.end).max())
        // Consecutive packets are 20 ms apart, give or take the clock slewing (≤ 0.1 ms a
        // packet, so ≤ 0.1 ms for each packet a step spans, dropped ones included). Units the agent dropped because its encoder fell behind (a starved emulated
        // CPU; logged and reported to the server as drops) leave whole-packet gaps; any other
        // step, or more missing packets than the agent reported, is a capture fault. The steps
        // are read from the timestamps: ffprobe's packet durations are the dts deltas, in which
        // a gap cannot show.
        let pts = probe.packets(stream: stream.index).compactMap(\.pts).sorted()
        let tick = probe.secondsPerTick(stream)
        var worst = 0.0
        var gaps: [PacketGap] = []
        for (index, (a, b)) in zip(pts, pts.dropFirst()).enumerated() {
            let step = Double(b - a) * tick
            let packets = max(1, (step / 0.020).rounded())
            worst = max(worst, abs(step - packets * 0.020) - (packets - 1) * 0.0001)
            if packets > 1 { gaps.append(PacketGap(packetsBefore: index + 1, missing: Int(packets) - 1)) }
        }
        let missing = gaps.reduce(0) { $0 + $1.missing }, reported = scenario.reportedLosses(track: label)
        #expect(worst < 0.0005, "\(label): a packet step \(worst * 1000) ms further off a whole number of 20 ms packets than slewing explains")
        #expect(missing <= reported, "\(label): \(missing) packets missing between others, \(reported) reported dropped or lost by the agent")
        // Dropped units that left no gap were the track's first or last: each moves its start or
        // its end by a packet.
        let edgeDrops = Double(max(0, reported - missing)) * 0.020
        #expect(span.start - start <= 0.040 + edgeDrops, "\(label) starts \((span.start - start) * 1000) ms after the recording")
        // One packet, plus the rounding of packet times to 48 kHz ticks (measured: 20.0 ms).
        #expect(end - span.end <= 0.0205 + edgeDrops, "\(label) ends \((end - span.end) * 1000) ms before the recording (\(reported - missing) dropped at its edges)")
        figure(scenario.name, "\(label): \(pts.count) packets + \(missing) dropped by the agent (\(reported) reported), \(String(format: "%.3f", span.end - span.start)) s of a \(String(format: "%.3f", end - start)) s recording (starts \(String(format: "%.1f", (span.start - start) * 1000)) ms after it, ends \(String(format: "%.1f", (end - span.end) * 1000)) ms before it), largest step error beyond slewing \(String(format: "%.2f", max(0, worst) * 1000)) ms")
        return gaps
    }

    /// Tone frequency and level, no dropout, and beeps exactly one second of samples apart,
    /// less the samples of packets the agent dropped between them (`gaps`).
    func checkSignal(_ audio: DecodedAudio, label: String, mono: Bool, gaps: [PacketGap]) {
        let tone = audio.channels[0]
        let beeps = mono ? audio.channels[0] : audio.channels[1]
        let end = audio.seconds - 0.1
        let frequency = DecodedAudio.toneFrequency(tone, from: 0.3, to: end, excluding: mono ? Self.beepHz : nil)
        #expect(abs(frequency - Self.toneHz) < 2, "\(label): tone at \(frequency) Hz")
        let onsets = DecodedAudio.beepOnsets(beeps, frequency: Self.beepHz)
        let spacings = zip(onsets, onsets.dropFirst()).map { $1 - $0 }
        // Samples are never re-timed (slewing moves timestamps only), so the beeps are 48000
        // samples apart unless capture lost or doubled samples — and ALSA capture loses whole
        // periods (960 here). Within 5 ms: the onset is read from Opus-decoded audio, and
        // under TCG the playing side (aplay into the loopback) may itself glitch by a ms.
        let tolerance = 240
        #expect(onsets.count >= Int(audio.seconds) - 2, "\(label): \(onsets.count) beeps in \(audio.seconds) s")
        // The decoded audio runs on over a dropped packet, so a spacing with dropped packets
        // between its beeps is that many 960-sample packets short. A beep next to a drop (its
        // onset may be in the dropped packet) is not measured.
        let unexpected = zip(onsets, onsets.dropFirst()).compactMap { from, to -> String? in
            let expected = PacketGap.expectedSpacing(from: from, to: to, gaps: gaps, margin: 1_920)
            guard let expected else { return nil }
            return abs(to - from - expected) <= tolerance ? nil : "\(to - from) (expected \(expected))"
        }
        let measured = zip(onsets, onsets.dropFirst()).filter { PacketGap.expectedSpacing(from: $0, to: $1, gaps: gaps, margin: 1_920) != nil }.count
        #expect(unexpected.isEmpty, "\(label): beep spacings \(spacings); off: \(unexpected); gaps \(gaps)")
        #expect(measured >= spacings.count - 2 * gaps.count && measured >= 3, "\(label): only \(measured) of \(spacings.count) spacings measurable")
        let dropouts = DecodedAudio.dropouts(tone, frequency: Self.toneHz, from: 0.3, to: end)
        #expect(dropouts.isEmpty, "\(label): tone drops out at \(dropouts)")
        var level = DecodedAudio.rmsDecibels(tone, from: 0.3, to: end)
        if !mono {
            #expect(abs(level - Self.toneDecibels) < 1, "\(label): tone level \(level) dBFS")
        } else {
            // A mono downmix of tone + beeps: measured between beeps (0.3…0.9 s of each second).
            level = (1..<max(2, Int(end))).map { DecodedAudio.rmsDecibels(tone, from: Double($0) + 0.3, to: Double($0) + 0.9) }.max() ?? -.infinity
            #expect(level > -16 && level < -8, "\(label): tone level \(level) dBFS between beeps")
        }
        let spread = spacings.isEmpty ? "–" : "\(spacings.min()!)…\(spacings.max()!)"
        figure("microphones", "\(label): tone \(String(format: "%.2f", frequency)) Hz at \(String(format: "%.2f", level)) dBFS, \(onsets.count) beeps \(spread) samples apart, \(dropouts.count) dropouts")
    }

    @Test func loopbackThroughHwPlughwAndDsnoopCarriesTheSignalWithoutAGap() throws {
        let scenario = try BenchResults.scenario("microphones")
        let probe = try scenario.probeCleanRecording()
        #expect(scenario.agentStatus == 0, "capture-agent exit \(scenario.agentStatus.map(String.init) ?? "none")")
        #expect(probe.streams.count == 4)
        #expect(!scenario.agentLog.contains("snd_pcm_readi failed"), "the ALSA read failed: see \(scenario.directory.path)/agent.log")
        for (index, label) in ["hw", "plughw", "dsnoop", "dummy"].enumerated() {
            let gaps = try checkContinuity(probe, label: label, scenario: scenario)
            let stream = try #require(probe.stream(label: label))
            let channels = FFprobe.int(stream.raw["channels"]) ?? 0
            #expect(channels == (label == "plughw" ? 1 : 2), "\(label): \(channels) channels")
            let audio = try DecodedAudio(file: scenario.recording, audioIndex: index, channelCount: max(1, channels))
            if label == "dummy" {
                // snd-dummy captures silence: only its timing is checked.
                figure("microphones", "dummy: level \(String(format: "%.1f", DecodedAudio.rmsDecibels(audio.channels[0], from: 0, to: audio.seconds))) dBFS")
            } else {
                checkSignal(audio, label: label, mono: channels == 1, gaps: gaps)
            }
            let clock = scenario.audioClockSummary(track: label)
            #expect(clock?.overruns == 0 && clock?.reanchors == 0, "\(label): \(String(describing: clock))")
        }
    }
}

/// Packets missing from a microphone track between two it has: units the agent dropped.
struct PacketGap: Equatable, CustomStringConvertible {
    /// Packets before the gap; each is 960 samples of decoded audio.
    var packetsBefore: Int
    var missing: Int

    static let packetSamples = 960

    /// Where the gap falls in the decoded audio, to within the decoder's pre-skip (the decoder
    /// drops its first few hundred samples, which shifts every position by that much).
    var decodedPosition: Int { packetsBefore * Self.packetSamples }

    var description: String { "\(missing) after packet \(packetsBefore)" }

    /// The spacing in decoded samples of two beeps one second apart: 48000 less the packets
    /// dropped between them; nil when a gap is within `margin` samples of either beep.
    static func expectedSpacing(from: Int, to: Int, gaps: [PacketGap], margin: Int) -> Int? {
        var expected = DecodedAudio.rate
        for gap in gaps {
            let position = gap.decodedPosition
            if abs(position - from) <= margin || abs(position - to) <= margin { return nil }
            if position > from && position < to { expected -= gap.missing * packetSamples }
        }
        return expected
    }
}

import Foundation
import TestSupport

/// One audio track of a recording decoded by ffmpeg (not by us) to 48 kHz signed 16-bit
/// PCM, with the measurements the bench's checks need.
struct DecodedAudio {
    static let rate = 48_000
    let channels: [[Double]]

    /// Decodes audio stream `audioIndex` (0 = the first audio stream) of `file`.
    init(file: String, audioIndex: Int, channelCount: Int) throws {
        let out = try runTool("ffmpeg", ["-nostdin", "-hide_banner", "-v", "error", "-i", file, "-map", "0:a:\(audioIndex)",
                                         "-f", "s16le", "-ar", "\(Self.rate)", "-ac", "\(channelCount)", "-"])
        guard out.status == 0 else { throw ToolError.failed("ffmpeg PCM decode of \(file) audio \(audioIndex)", out) }
        let samples: [Int16] = out.stdout.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        var channels = [[Double]](repeating: [], count: channelCount)
        for (i, sample) in samples.enumerated() { channels[i % channelCount].append(Double(Int16(littleEndian: sample)) / 32768) }
        self.channels = channels
    }

    var seconds: Double { Double(channels.first?.count ?? 0) / Double(Self.rate) }

    /// Power of `frequency` in `samples[start..<start+length]` (Goertzel), as the amplitude of
    /// a sine that would give it.
    static func amplitude(of frequency: Double, in samples: [Double], start: Int, length: Int) -> Double {
        let w = 2 * Double.pi * frequency / Double(rate)
        let coefficient = 2 * cos(w)
        var s1 = 0.0, s2 = 0.0
        for i in start..<(start + length) {
            let s0 = samples[i] + coefficient * s1 - s2
            s2 = s1
            s1 = s0
        }
        let power = s1 * s1 + s2 * s2 - coefficient * s1 * s2
        return 2 * sqrt(max(0, power)) / Double(length)
    }

    /// The dominant frequency from rising zero crossings, linearly interpolated, between
    /// `from` and `to` seconds; only 5 ms windows whose `exclude` amplitude is negligible count
    /// (on a mono mix the beeps would add crossings).
    static func toneFrequency(_ samples: [Double], from: Double, to: Double, excluding exclude: Double? = nil) -> Double {
        let window = rate / 200
        var crossingsTime = 0.0, cycles = 0.0
        var start = Int(from * Double(rate))
        let end = min(samples.count, Int(to * Double(rate)))
        while start + window <= end {
            if let exclude, amplitude(of: exclude, in: samples, start: start, length: window) > 0.01 {
                start += window
                continue
            }
            var first: Double?, last: Double?, count = 0
            for i in (start + 1)..<(start + window) where samples[i - 1] < 0 && samples[i] >= 0 {
                let t = Double(i - 1) + samples[i - 1] / (samples[i - 1] - samples[i])
                if first == nil { first = t }
                last = t
                count += 1
            }
            if let first, let last, count >= 2 {
                crossingsTime += last - first
                cycles += Double(count - 1)
            }
            start += window
        }
        return crossingsTime > 0 ? cycles / crossingsTime * Double(rate) : 0
    }

    /// RMS level in dBFS (a full-scale sine is −3 dBFS) between `from` and `to` seconds.
    static func rmsDecibels(_ samples: [Double], from: Double, to: Double) -> Double {
        let a = Int(from * Double(rate)), b = min(samples.count, Int(to * Double(rate)))
        guard b > a else { return -.infinity }
        var sum = 0.0
        for i in a..<b { sum += samples[i] * samples[i] }
        return 10 * log10(sum / Double(b - a))
    }

    /// Sample positions where a `frequency` beep begins: 5 ms windows every 1 ms; an onset is a
    /// window above half the loudest window after at least `quiet` seconds below it. The
    /// position is refined to the first sample above a quarter of the beep's amplitude.
    /// A beep already sounding when the audio begins has no onset in it: the recording started
    /// during the beep (measured: a first spacing of 45119 samples, the recording having begun
    /// 60 ms into a beep), so loudness within `beepLength` seconds of the start is not one.
    static func beepOnsets(_ samples: [Double], frequency: Double, quiet: Double = 0.5, beepLength: Double = 0.1) -> [Int] {
        let window = rate / 200, hop = rate / 1000
        var levels: [Double] = []
        var start = 0
        while start + window <= samples.count {
            levels.append(amplitude(of: frequency, in: samples, start: start, length: window))
            start += hop
        }
        guard let loudest = levels.max(), loudest > 0.01 else { return [] }
        var onsets: [Int] = []
        var lastLoud: Int?
        for (i, level) in levels.enumerated() where level > loudest / 2 {
            if lastLoud.map({ (i - $0) * hop > Int(quiet * Double(rate)) }) ?? (i * hop >= Int(beepLength * Double(rate))) {
                // The beep starts within this window: its first sample of notable amplitude.
                let from = i * hop
                let firstLoud = (from..<min(samples.count, from + window)).first { abs(samples[$0]) > loudest / 4 } ?? from
                onsets.append(firstLoud)
            }
            lastLoud = i
        }
        return onsets
    }

    /// Runs of 5 ms windows where a continuous `frequency` tone falls below a quarter of its
    /// median amplitude — samples lost or replaced by silence — as (start seconds, length ms).
    static func dropouts(_ samples: [Double], frequency: Double, from: Double, to: Double) -> [(at: Double, milliseconds: Double)] {
        let window = rate / 200
        var levels: [(Int, Double)] = []
        var start = Int(from * Double(rate))
        let end = min(samples.count, Int(to * Double(rate)))
        while start + window <= end {
            levels.append((start, amplitude(of: frequency, in: samples, start: start, length: window)))
            start += window
        }
        let sorted = levels.map(\.1).sorted()
        guard !sorted.isEmpty else { return [] }
        let median = sorted[sorted.count / 2]
        var result: [(Double, Double)] = []
        var runStart: Int?
        var runLength = 0
        for (position, level) in levels {
            if level < median / 4 {
                if runStart == nil { runStart = position }
                runLength += 1
            } else if let s = runStart {
                result.append((Double(s) / Double(rate), Double(runLength) * 5))
                runStart = nil
                runLength = 0
            }
        }
        if let s = runStart { result.append((Double(s) / Double(rate), Double(runLength) * 5)) }
        return result
    }
}

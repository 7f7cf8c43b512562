#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A deterministic synthetic microphone: a quiet continuous tone (−30 dBFS) plus a loud
/// 1 kHz beep (−6 dBFS, 100 ms) starting exactly at every multiple of `flashInterval`
/// seconds — the same instants as ``TestPatternVideo``'s flashes when both start at time 0.
///
/// Sample `n` depends only on `n`, so any chunking gives identical audio.
public struct TestToneAudio: Sendable {
    public static let toneAmplitude = 32767.0 * 0.031622776601683794  // −30 dBFS
    public static let beepAmplitude = 32767.0 * 0.5011872336272722  // −6 dBFS
    public static let beepFrequency = 1000.0
    public static let beepDuration = 0.1

    public let sampleRate: Int
    public let channels: Int
    public let frequency: Double
    /// Samples between beep onsets (`flashInterval * sampleRate`, rounded).
    public let beepPeriod: Int64
    /// Samples per beep.
    public let beepLength: Int64

    /// - Parameters:
    ///   - frequency: the continuous tone, in Hz.
    ///   - flashInterval: seconds between beeps.
    public init(sampleRate: Int = 48000, channels: Int = 1, frequency: Double = 440, flashInterval: Double = 1) {
        precondition(sampleRate > 0 && channels > 0 && flashInterval > 0)
        self.sampleRate = sampleRate
        self.channels = channels
        self.frequency = frequency
        self.beepPeriod = max(1, Int64((flashInterval * Double(sampleRate)).rounded()))
        self.beepLength = Int64((Self.beepDuration * Double(sampleRate)).rounded())
    }

    /// `count` sample frames starting at absolute sample index `sampleIndex`, interleaved
    /// over `channels` (all channels identical): `count * channels` values.
    public func samples(from sampleIndex: Int64, count: Int) -> [Int16] {
        let rate = Double(sampleRate)
        var out = [Int16](repeating: 0, count: count * channels)
        out.withUnsafeMutableBufferPointer { buf in
            for i in 0..<count {
                let n = sampleIndex + Int64(i)
                // Reduce the phase to [0, 1) before multiplying by 2π to keep precision for large n.
                let cycles = Double(n) * frequency / rate
                var value = Self.toneAmplitude * sin(2 * Double.pi * (cycles - cycles.rounded(.down)))
                var k = n % beepPeriod
                if k < 0 { k += beepPeriod }
                if k < beepLength {
                    value += Self.beepAmplitude * sin(2 * Double.pi * Self.beepFrequency * Double(k) / rate)
                }
                let s = Int16(max(-32768, min(32767, value.rounded())))
                for c in 0..<channels { buf[i * channels + c] = s }
            }
        }
        return out
    }
}

/// Finds the beeps of ``TestToneAudio`` in (possibly lossy-decoded) PCM.
public enum TestToneReader {
    /// Sample indices (per channel) where a beep starts: the first sample of a 1 ms window
    /// whose energy exceeds −18 dBFS (midway between tone and beep) after at least 50 ms of
    /// quiet, refined to the first sample of that window above half that amplitude.
    /// - Parameter channels: for interleaved input; only the first channel is analysed.
    public static func beepOnsets(samples: [Int16], sampleRate: Int, channels: Int = 1) -> [Int] {
        let frames = samples.count / max(1, channels)
        let window = max(1, sampleRate / 1000)
        let quietSpan = sampleRate / 20
        let thresholdAmplitude = 32767.0 * 0.12589254117941673  // −18 dBFS
        // Mean square of a sine of that amplitude, times the window length.
        let energyThreshold = thresholdAmplitude * thresholdAmplitude / 2 * Double(window)
        var onsets: [Int] = []
        var energy = 0.0
        var lastLoud: Int?
        func sample(_ i: Int) -> Double { Double(samples[i * channels]) }
        for i in 0..<frames {
            let s = sample(i)
            energy += s * s
            if i >= window {
                let old = sample(i - window)
                energy -= old * old
            }
            guard energy > energyThreshold else { continue }
            if lastLoud == nil || i - lastLoud! > quietSpan {
                let start = max(0, i - window + 1)
                var onset = i
                for j in start...i where abs(sample(j)) > thresholdAmplitude / 2 {
                    onset = j
                    break
                }
                onsets.append(onset)
            }
            lastLoud = i
        }
        return onsets
    }
}

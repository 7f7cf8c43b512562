#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// H.264 NAL unit framing (ITU-T H.264 Annex B and ISO/IEC 14496-15 §5.3.2).
public enum H264NALUnits {
    public static let typeSPS: UInt8 = 7
    public static let typePPS: UInt8 = 8
    public static let typeAUD: UInt8 = 9
    public static let typeIDR: UInt8 = 5

    /// True when `data` starts with a 3- or 4-byte Annex B start code.
    public static func isAnnexB(_ data: [UInt8]) -> Bool {
        data.count >= 4 && data[0] == 0 && data[1] == 0 && (data[2] == 1 || (data[2] == 0 && data[3] == 1))
    }

    /// Splits an access unit into NAL unit ranges, whether it is Annex B or 4-byte length-prefixed.
    /// A 4-byte length prefix can itself look like a start code (`00 00 01 2C` is a 300-byte
    /// NAL unit), so the length-prefixed reading wins whenever its lengths tile the sample
    /// exactly; only then is Annex B tried.
    public static func nalUnitRanges(in data: [UInt8]) throws(MP4ParseError) -> [Range<Int>] {
        do {
            return try lengthPrefixedRanges(data)
        } catch {
            guard isAnnexB(data) else { throw error }
            return annexBRanges(data)
        }
    }

    /// The access unit with every NAL unit behind a 4-byte big-endian length (the form MP4
    /// samples and the wire protocol's H.264 samples use), from Annex B or length-prefixed input.
    public static func lengthPrefixed(_ data: [UInt8]) throws(MP4ParseError) -> [UInt8] {
        let ranges = try nalUnitRanges(in: data)
        var out: [UInt8] = []
        out.reserveCapacity(data.count + 4 * ranges.count)
        for r in ranges {
            let n = UInt32(r.count)
            out += [UInt8(n >> 24), UInt8(truncatingIfNeeded: n >> 16), UInt8(truncatingIfNeeded: n >> 8), UInt8(truncatingIfNeeded: n)]
            out += data[r]
        }
        return out
    }

    static func lengthPrefixedRanges(_ data: [UInt8]) throws(MP4ParseError) -> [Range<Int>] {
        var ranges: [Range<Int>] = []
        var p = 0
        while p < data.count {
            guard data.count - p >= 4 else { throw .invalid("NAL length prefix cut short at byte \(p)") }
            let n = Int(data[p]) << 24 | Int(data[p + 1]) << 16 | Int(data[p + 2]) << 8 | Int(data[p + 3])
            guard n > 0, n <= data.count - p - 4 else { throw .invalid("NAL length \(n) at byte \(p) exceeds the sample") }
            guard data[p + 4] & 0x80 == 0 else { throw .invalid("NAL unit at byte \(p + 4) has its forbidden_zero_bit set") }
            ranges.append(p + 4 ..< p + 4 + n)
            p += 4 + n
        }
        return ranges
    }

    /// Finds NAL units between start codes. Trailing zero bytes before a start code belong
    /// to it (a 4-byte start code), not to the previous NAL unit.
    static func annexBRanges(_ data: [UInt8]) -> [Range<Int>] {
        var ranges: [Range<Int>] = []
        data.withUnsafeBufferPointer { buf in
            guard let base = buf.baseAddress else { return }
            let n = buf.count
            var nalStart = -1
            var i = 2
            // A start code ends in 0x01 preceded by two zeros: find each 0x01 with memchr
            // (vectorised) instead of looking at every byte.
            while i < n {
                guard let hit = memchr(base + i, 1, n - i) else { break }
                let one = base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
                if one >= 2, buf[one - 1] == 0, buf[one - 2] == 0 {
                    if nalStart >= 0 {
                        // Zeros before the start code belong to it (a 4-byte start code).
                        var end = one - 2
                        while end > nalStart, buf[end - 1] == 0 { end -= 1 }
                        if end > nalStart { ranges.append(nalStart..<end) }
                    }
                    nalStart = one + 1
                    i = one + 3
                } else {
                    i = one + 1
                }
            }
            if nalStart >= 0 {
                // trailing_zero_8bits after the last NAL unit are padding, not payload (Annex B.1).
                var end = n
                while end > nalStart, buf[end - 1] == 0 { end -= 1 }
                if end > nalStart { ranges.append(nalStart..<end) }
            }
        }
        return ranges
    }

    /// Removes emulation-prevention bytes (00 00 03 → 00 00), §7.4.1.
    public static func removeEmulationPrevention(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(data.count)
        var zeros = 0
        for b in data {
            if zeros >= 2, b == 3 { zeros = 0; continue }
            zeros = b == 0 ? zeros + 1 : 0
            out.append(b)
        }
        return out
    }
}

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
    public static func nalUnitRanges(in data: [UInt8]) throws(MP4ParseError) -> [Range<Int>] {
        isAnnexB(data) ? annexBRanges(data) : try lengthPrefixedRanges(data)
    }

    static func lengthPrefixedRanges(_ data: [UInt8]) throws(MP4ParseError) -> [Range<Int>] {
        var ranges: [Range<Int>] = []
        var p = 0
        while p < data.count {
            guard data.count - p >= 4 else { throw .invalid("NAL length prefix cut short at byte \(p)") }
            let n = Int(data[p]) << 24 | Int(data[p + 1]) << 16 | Int(data[p + 2]) << 8 | Int(data[p + 3])
            guard n > 0, n <= data.count - p - 4 else { throw .invalid("NAL length \(n) at byte \(p) exceeds the sample") }
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
            let n = buf.count
            var i = 0
            var nalStart = -1
            while i + 2 < n {
                // Fast skip: a start code's third byte is 1, and the two before it are 0.
                if buf[i + 2] > 1 { i += 3; continue }
                if buf[i] == 0, buf[i + 1] == 0, buf[i + 2] == 1 {
                    if nalStart >= 0 {
                        var end = i
                        while end > nalStart, buf[end - 1] == 0 { end -= 1 }
                        if end > nalStart { ranges.append(nalStart..<end) }
                    }
                    nalStart = i + 3
                    i += 3
                } else {
                    i += 1
                }
            }
            if nalStart >= 0, nalStart < n { ranges.append(nalStart..<n) }
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

/// Converts between nanoseconds and track ticks with round-half-up, without overflowing for
/// recordings of many hours (the product is formed in 128 bits).
///
/// Every function here is total: values that come from outside (a sample's timestamps, a
/// damaged file's boxes) can be anything, so results saturate at the `Int64` range instead
/// of trapping. The muxer's own bounds (``MuxerTimestampBounds``) keep real recordings far
/// away from saturation.
enum TimeScaling {
    static func ticks(nanos: Int64, timescale: UInt32) -> Int64 {
        scale(nanos, by: Int64(timescale), over: 1_000_000_000)
    }

    static func nanos(ticks: Int64, timescale: UInt32) -> Int64 {
        scale(ticks, by: 1_000_000_000, over: Int64(timescale))
    }

    /// `value × num / den`, rounded half up (away from zero), saturating. `num` < 0 counts as
    /// 0 and `den` ≤ 0 gives 0 (a zero timescale read from a damaged file).
    static func scale(_ value: Int64, by num: Int64, over den: Int64) -> Int64 {
        guard den > 0, num > 0 else { return 0 }
        let negative = value < 0
        let product = value.magnitude.multipliedFullWidth(by: UInt64(num))
        // The quotient must fit 64 bits, or dividingFullWidth traps.
        guard product.high < UInt64(den) else { return negative ? .min : .max }
        let (q, r) = UInt64(den).dividingFullWidth(product)
        let rounded = r >= UInt64(den) - r ? q &+ (q == .max ? 0 : 1) : q
        return negative ? Int64(clampingNegated: rounded) : Int64(clamping: rounded)
    }

    /// `a + b`, saturating at the `Int64` range.
    static func sum(_ a: Int64, _ b: Int64) -> Int64 {
        let (s, overflow) = a.addingReportingOverflow(b)
        return overflow ? (b > 0 ? .max : .min) : s
    }

    /// `a - b`, saturating at the `Int64` range.
    static func difference(_ a: Int64, _ b: Int64) -> Int64 {
        let (d, overflow) = a.subtractingReportingOverflow(b)
        return overflow ? (b < 0 ? .max : .min) : d
    }
}

extension Int64 {
    /// `-magnitude`, or `Int64.min` when it does not fit.
    init(clampingNegated magnitude: UInt64) {
        self = magnitude >= Int64.min.magnitude ? .min : -Int64(magnitude)
    }
}

extension UInt64 {
    /// `self + other`, or `UInt64.max` when it does not fit.
    func saturatingSum(_ other: UInt64) -> UInt64 {
        let (s, overflow) = addingReportingOverflow(other)
        return overflow ? .max : s
    }
}

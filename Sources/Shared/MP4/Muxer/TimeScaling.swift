/// Converts between nanoseconds and track ticks with round-half-up, without overflowing for
/// recordings of many hours (the product is formed in 128 bits).
enum TimeScaling {
    static func ticks(nanos: Int64, timescale: UInt32) -> Int64 {
        scale(nanos, by: Int64(timescale), over: 1_000_000_000)
    }

    static func nanos(ticks: Int64, timescale: UInt32) -> Int64 {
        scale(ticks, by: 1_000_000_000, over: Int64(timescale))
    }

    static func scale(_ value: Int64, by num: Int64, over den: Int64) -> Int64 {
        let negative = value < 0
        let magnitude = value.magnitude
        let product = magnitude.multipliedFullWidth(by: UInt64(num))
        let (q, r) = UInt64(den).dividingFullWidth(product)
        let rounded = r * 2 >= UInt64(den) ? q + 1 : q
        return negative ? -Int64(rounded) : Int64(rounded)
    }
}

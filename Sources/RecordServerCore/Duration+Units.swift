/// `Duration` in the units the wire, NIO's timers and the metrics take: one place for the
/// conversion, sub-second parts included (issue 16: an idle timeout of 2.5 s was announced
/// as 2000 ms).
extension Duration {
    /// Whole nanoseconds, saturating at `Int64.max`.
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (ns, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : ns.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
    }

    /// Milliseconds, with their fraction.
    var milliseconds: Double {
        Double(components.seconds) * 1000 + Double(components.attoseconds) / 1e15
    }

    /// Whole milliseconds for a 32-bit wire field, saturating at `UInt32.max` (49.7 days).
    var wireMilliseconds: UInt32 {
        UInt32(clamping: nanoseconds / 1_000_000)
    }
}

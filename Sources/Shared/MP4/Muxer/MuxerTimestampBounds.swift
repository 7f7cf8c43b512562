/// The times the muxer accepts (``MP4Muxer/append(_:)`` refuses others with
/// `timestampOutOfRange`). Wider than the wire protocol's bounds (protocol.md §6.12; the muxer
/// is a library and also takes negative source times), but narrow enough that no sum or
/// difference of two accepted times, and no nanosecond → tick conversion of one, can overflow
/// 64 bits anywhere in the muxer.
public enum MuxerTimestampBounds {
    /// pts and dts are in `-timestampMagnitude...timestampMagnitude` nanoseconds (2^62).
    public static let timestampMagnitude: Int64 = 1 << 62
    /// Largest `pts - dts` in nanoseconds (2^40, about 18 minutes; a `trun` composition offset
    /// is 32 bits of ticks).
    public static let maxPresentationDelay: Int64 = 1 << 40
    /// Largest sample duration in nanoseconds (2^40).
    public static let maxDuration: Int64 = 1 << 40
    /// Largest distance of a dts from the recording's first (or, after a resume, from the
    /// reopened file's decode origin), either direction: 2^42 ns, about 51 days.
    public static let maxRecordingSpan: Int64 = 1 << 42
    /// Largest `fragmentDuration`, `stallTimeout` and `maxSegmentDuration` (2^40 ns).
    public static let maxConfiguredInterval: Int64 = 1 << 40

    /// Why a sample's times are refused, or nil. `reference` is the recording's reference dts.
    static func violation(pts: Int64, dts: Int64, duration: Int64, reference: Int64?) -> String? {
        let range = -timestampMagnitude...timestampMagnitude
        guard range.contains(pts), range.contains(dts) else { return "PTS \(pts) or DTS \(dts) is beyond ±2^62 ns" }
        // Both within ±2^62, yet their difference may still need 64 bits unsigned: checked.
        let (delay, overflow) = pts.subtractingReportingOverflow(dts)
        guard !overflow, delay <= maxPresentationDelay else { return "PTS \(pts) - DTS \(dts) exceeds 2^40 ns" }
        guard duration <= maxDuration else { return "duration \(duration) ns exceeds 2^40 ns" }
        if let reference {
            let (distance, overflow) = dts.subtractingReportingOverflow(reference)
            guard !overflow, distance.magnitude <= UInt64(maxRecordingSpan) else {
                return "DTS \(dts) is more than 2^42 ns from the recording's reference \(reference)"
            }
        }
        return nil
    }
}

import Foundation

/// The API's dates: ISO-8601 / RFC 3339 in UTC with milliseconds, e.g. `2024-05-01T10:00:00.250Z`.
public enum AdminDates {
    private static let fractional = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
    private static let whole = Date.ISO8601FormatStyle()

    /// Accepts RFC 3339 date-times (OpenAPI's `date-time`): `Z` or a `±hh:mm` offset, with or
    /// without fractional seconds, `T` and `Z` in either case.
    ///
    /// The offset is taken off here and the rest read as UTC: `ISO8601FormatStyle` refuses
    /// offsets past ±18:00 (a `TimeZone`'s range), which RFC 3339 allows up to ±23:59, and
    /// reads `+02:60` as `+03:00`.
    public static func parse(_ text: String) -> Date? {
        guard let (utc, offsetSeconds) = splitOffset(text.uppercased()) else { return nil }
        // A text neither style reads is not a date: nil, whatever the style's error says.
        let date = (try? fractional.parse(utc)) ?? (try? whole.parse(utc))
        return date?.addingTimeInterval(-offsetSeconds)
    }

    /// `…Z` or `…±hh:mm` (RFC 3339 §5.6) as the same time with `Z` and the offset in seconds.
    private static func splitOffset(_ text: String) -> (String, TimeInterval)? {
        if text.hasSuffix("Z") { return (text, 0) }
        let offset = Array(text.utf8.suffix(6))
        guard offset.count == 6, offset[0] == UInt8(ascii: "+") || offset[0] == UInt8(ascii: "-"), offset[3] == UInt8(ascii: ":"),
              let hours = Int(String(decoding: offset[1 ... 2], as: UTF8.self)), (0 ... 23).contains(hours),
              let minutes = Int(String(decoding: offset[4 ... 5], as: UTF8.self)), (0 ... 59).contains(minutes) else { return nil }
        let seconds = TimeInterval(hours * 3600 + minutes * 60)
        return (String(text.dropLast(6)) + "Z", offset[0] == UInt8(ascii: "+") ? seconds : -seconds)
    }

    /// The date truncated to whole milliseconds.
    ///
    /// The milliseconds are counted here rather than by `ISO8601FormatStyle`, which truncates a
    /// date stored a hair below its millisecond (as a `Double`, almost every date parsed from
    /// this format, or read back from the catalog) to the millisecond before: `.002` read and
    /// written again came out `.001`, so a client could not print what the server sent. One
    /// microsecond of tolerance takes such a date to its own millisecond.
    public static func format(_ date: Date) -> String {
        let millis = Int64((date.timeIntervalSince1970 * 1000 + 0.001).rounded(.down))
        var (seconds, fraction) = millis.quotientAndRemainder(dividingBy: 1000)
        if fraction < 0 { seconds -= 1; fraction += 1000 }
        let text = whole.format(Date(timeIntervalSince1970: TimeInterval(seconds)))  // "2024-05-01T10:00:00Z"
        let digits = String(fraction)
        return text.dropLast() + "." + String(repeating: "0", count: 3 - digits.count) + digits + "Z"
    }
}

import Foundation

/// The API's dates: ISO-8601 / RFC 3339 in UTC with milliseconds, e.g. `2024-05-01T10:00:00.250Z`.
public enum AdminDates {
    private static let fractional = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
    private static let whole = Date.ISO8601FormatStyle()

    /// Accepts full date-times with `Z` or a numeric offset, with or without fractional seconds.
    /// (A text neither style reads is not a date: nil, whatever the style's error says.)
    public static func parse(_ text: String) -> Date? {
        (try? fractional.parse(text)) ?? (try? whole.parse(text))
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

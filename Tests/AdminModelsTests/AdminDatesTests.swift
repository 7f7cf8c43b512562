import AdminModels
import Foundation
import Testing

@Suite("Admin API dates")
struct AdminDatesTests {
    /// What a client reads it writes again unchanged: `ISO8601FormatStyle` alone wrote
    /// `.002` read back as `.001` (1,489 of 3,000 dates in a check), so recordctl's tables
    /// would have shown dates the server never sent.
    @Test func everyMillisecondSurvivesARoundTrip() throws {
        for millisecond in 0..<1000 {
            let text = "2024-05-01T10:00:12." + String(format: "%03d", millisecond) + "Z"
            let date = try #require(AdminDates.parse(text))
            #expect(AdminDates.format(date) == text)
        }
    }

    /// The server writes its own dates (sub-millisecond) truncated to the millisecond, as before.
    @Test func serverDatesAreTruncatedToTheMillisecond() {
        let base = 1_714_557_600.0
        #expect(AdminDates.format(Date(timeIntervalSince1970: base + 0.2509)) == "2024-05-01T10:00:00.250Z")
        #expect(AdminDates.format(Date(timeIntervalSince1970: base + 59.9999)) == "2024-05-01T10:00:59.999Z")
        #expect(AdminDates.format(Date(timeIntervalSince1970: base)) == "2024-05-01T10:00:00.000Z")
        #expect(AdminDates.format(Date(timeIntervalSince1970: -0.25)) == "1969-12-31T23:59:59.750Z")
    }

    @Test func queriesAcceptOffsetsAndWholeSeconds() {
        #expect(AdminDates.parse("2024-05-01T12:00:00.5+02:00") == Date(timeIntervalSince1970: 1_714_557_600.5))
        #expect(AdminDates.parse("2024-05-01T10:00:00Z") == Date(timeIntervalSince1970: 1_714_557_600))
        #expect(AdminDates.parse("2024-05-01") == nil)
    }
}

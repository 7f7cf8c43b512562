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

    /// Every RFC 3339 date-time (what OpenAPI's `date-time` format is) is read: schemathesis
    /// found `ISO8601FormatStyle` alone refusing an offset past ±18:00 ("+19:21", 400 for a
    /// valid `since`); it refused `t`/`z` in lower case too.
    @Test(arguments: [
        ("2024-05-01T10:00:00+19:21", 1_714_487_940.0),  // 2024-05-01T10:00:00Z is 1_714_557_600
        ("2024-05-01T10:00:00-23:59", 1_714_643_940.0),
        ("2024-05-01t10:00:00z", 1_714_557_600.0),
        ("2024-05-01T10:00:00.011878-03:08", 1_714_568_880.011878),
        ("2024-05-01T10:00:00.5Z", 1_714_557_600.5),
    ] as [(String, Double)])
    func queriesAcceptEveryRFC3339DateTime(text: String, seconds: Double) throws {
        let date = try #require(AdminDates.parse(text), "\(text)")
        #expect(abs(date.timeIntervalSince1970 - seconds) < 0.001, "\(text): \(date)")
    }

    @Test(arguments: ["2024-05-01T10:00:00", "2024-05-01T10:00:00+24:00", "2024-05-01T10:00:00+02:60", "2024-05-01T10:00:00+0200",
                      "2024-05-01 10:00:00Z", "yesterday", ""])
    func queriesRefuseWhatIsNotAnRFC3339DateTime(text: String) {
        #expect(AdminDates.parse(text) == nil, "\(text)")
    }
}

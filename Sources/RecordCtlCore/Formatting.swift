import AdminModels
import Foundation

/// Plain-text tables and human-readable numbers for terminal output.
enum Formatting {
    static func table(_ header: [String], _ rows: [[String]]) -> String {
        var widths = header.map(\.count)
        for row in rows { for (i, cell) in row.enumerated() where i < widths.count { widths[i] = max(widths[i], cell.count) } }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { i, c in c.padding(toLength: widths[i], withPad: " ", startingAt: 0) }
                .joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }
        return ([line(header)] + rows.map(line)).joined(separator: "\n")
    }

    static func bytes(_ n: UInt64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(n)
        var unit = 0
        while value >= 1024, unit < units.count - 1 { value /= 1024; unit += 1 }
        return unit == 0 ? "\(n) B" : String(format: "%.1f %@", value, units[unit])
    }

    static func seconds(_ s: Double) -> String { String(format: "%.3f s", s) }
    static func rate(_ bitsPerSecond: Double) -> String { String(format: "%.0f kb/s", bitsPerSecond / 1000) }
}

/// Writes to standard error (progress and diagnostics stay out of piped output).
func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

/// `--json` output: pretty-printed with sorted keys.
enum JSONOutput {
    /// One of the admin API's types, written as the server writes it (AdminModels' encoder).
    static func pretty(_ value: some Encodable) -> String {
        // Encoding the API's own types cannot fail: they hold no non-finite doubles the server
        // would not have refused to send in the first place.
        let data = (try? AdminJSON.encoder(prettyPrinted: true).encode(value)) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    /// The file tools' reports, built as JSON objects.
    static func pretty(jsonObject object: Any) -> String {
        // The reports hold only strings, integers, finite doubles, arrays and dictionaries,
        // which JSONSerialization always encodes.
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}

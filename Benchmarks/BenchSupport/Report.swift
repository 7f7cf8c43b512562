/// A titled table printed as aligned plain text or as Markdown.
public struct Table {
    public var title: String
    public var header: [String]
    public var rows: [[String]] = []
    /// Columns aligned left (the others right).
    public var leftColumns: Set<Int> = [0]

    public init(_ title: String, header: [String], leftColumns: Set<Int> = [0]) {
        self.title = title
        self.header = header
        self.leftColumns = leftColumns
    }

    public mutating func add(_ row: [String]) { rows.append(row) }

    public func render(markdown: Bool) -> String {
        if markdown {
            var out = title.isEmpty ? "" : "**\(title)**\n\n"
            out += "| " + header.joined(separator: " | ") + " |\n"
            out += "|" + header.indices.map { leftColumns.contains($0) ? "---|" : "---:|" }.joined() + "\n"
            for row in rows { out += "| " + row.map { $0.replacingOccurrences(of: "|", with: "\\|") }.joined(separator: " | ") + " |\n" }
            return out
        }
        var widths = header.map(\.count)
        for row in rows { for (i, cell) in row.enumerated() where i < widths.count { widths[i] = max(widths[i], cell.count) } }
        func line(_ cells: [String]) -> String {
            var text = cells.enumerated().map { i, cell in
                let pad = String(repeating: " ", count: max(0, widths[i] - cell.count))
                return leftColumns.contains(i) ? cell + pad : pad + cell
            }.joined(separator: "  ")
            while text.last == " " { text.removeLast() }
            return text
        }
        var out = title.isEmpty ? "" : title + "\n"
        out += line(header) + "\n"
        out += widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ") + "\n"
        for row in rows { out += line(row) + "\n" }
        return out
    }
}

/// Key/value facts (machine, content) as a two-column table.
public func factsTable(_ title: String, _ facts: [(String, String)]) -> Table {
    var t = Table(title, header: ["Item", "Value"], leftColumns: [0, 1])
    for (k, v) in facts { t.add([k, v]) }
    return t
}

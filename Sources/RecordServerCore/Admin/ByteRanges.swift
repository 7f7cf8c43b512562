import Foundation

/// What a `Range` header asks of a file of `size` bytes (RFC 9110 §14.1.2 and §14.2): the
/// whole file, the byte ranges to send, or nothing the file can satisfy. Sans-I/O: the
/// download route (`RecordingDownload`) decides the status from it.
enum ByteRangeSelection: Equatable, Sendable {
    /// No `Range`, one this server ignores (another unit, bad syntax), or more ranges than
    /// worth sending as parts: 200 with the whole file — what RFC 9110 allows for all three.
    case whole
    /// 206: sorted, overlapping or adjacent ranges merged, each within the file.
    case ranges([ClosedRange<Int64>])
    /// 416: valid syntax, but every range starts past the end (or asks for 0 bytes).
    case unsatisfiable

    /// More ranges than this get the whole file: hundreds of tiny parts cost more to send
    /// than the file, and are how a client makes a server work hard for little.
    static let maxRanges = 16

    static func parse(_ header: String?, size: Int64) -> ByteRangeSelection {
        guard let header else { return .whole }
        let value = header.trimmingCharacters(in: .whitespaces)
        guard value.count > 6, value.prefix(6).lowercased() == "bytes=" else { return .whole }
        let specs = value.dropFirst(6).split(separator: ",", omittingEmptySubsequences: false)
        guard specs.count <= 4 * maxRanges else { return .whole }
        var ranges: [ClosedRange<Int64>] = []
        for raw in specs {
            let spec = raw.trimmingCharacters(in: .whitespaces)
            guard let dash = spec.firstIndex(of: "-") else { return .whole }
            let first = spec[..<dash], last = spec[spec.index(after: dash)...]
            switch (first.isEmpty, last.isEmpty) {
            case (true, true):
                return .whole
            case (true, false):
                // A suffix: the last N bytes (all of a shorter file).
                guard let n = Self.number(last) else { return .whole }
                if n > 0, size > 0 { ranges.append(max(0, size - n) ... size - 1) }
            case (false, _):
                guard let start = Self.number(first) else { return .whole }
                var end = size - 1
                if !last.isEmpty {
                    guard let stated = Self.number(last), stated >= start else { return .whole }
                    end = min(stated, size - 1)
                }
                if start < size { ranges.append(start ... end) }
            }
        }
        guard !ranges.isEmpty else { return .unsatisfiable }
        let merged = Self.merged(ranges)
        return merged.count > maxRanges ? .whole : .ranges(merged)
    }

    /// Digits only (no sign, no spaces); a number past Int64 is as good as "past the end".
    private static func number(_ text: Substring) -> Int64? {
        guard !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int64(text) ?? .max
    }

    /// Sorted, with overlapping and adjacent ranges joined (RFC 9110 §14.2 lets a server
    /// coalesce them; a client reads each part's `Content-Range` anyway).
    private static func merged(_ ranges: [ClosedRange<Int64>]) -> [ClosedRange<Int64>] {
        var result: [ClosedRange<Int64>] = []
        for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = result.last, range.lowerBound <= last.upperBound + 1 {
                result[result.count - 1] = last.lowerBound ... max(last.upperBound, range.upperBound)
            } else {
                result.append(range)
            }
        }
        return result
    }
}

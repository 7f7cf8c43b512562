import Shared
import Testing

/// Bytes as spaced hex pairs ("00 1F A0"), for readable failure messages and for comparing
/// encoded bytes with documented vectors.
public func hex(_ bytes: some Sequence<UInt8>) -> String {
    bytes.map { b in
        let s = String(b, radix: 16, uppercase: true)
        return s.count == 1 ? "0" + s : s
    }.joined(separator: " ")
}

/// Records an issue unless `body` throws a ``MuxerError`` with `code` (its `==` compares codes
/// only); returns the error for further checks.
/// Generic over the closure's error type, so a `throws(MuxerError)` closure is taken as it is.
@discardableResult
public func expectMuxerError<T, Failure: Error>(_ code: MuxerError.Code, _ what: String = "", sourceLocation: SourceLocation = #_sourceLocation,
                                                _ body: () throws(Failure) -> T) -> MuxerError? {
    let context = what.isEmpty ? "" : what + ": "
    do {
        let value = try body()
        Issue.record("\(context)expected MuxerError.\(code), got \(value)", sourceLocation: sourceLocation)
        return nil
    } catch {
        guard let error = error as? MuxerError else {
            Issue.record("\(context)expected MuxerError.\(code), got \(error)", sourceLocation: sourceLocation)
            return nil
        }
        #expect(error.code == code, "\(context)expected \(code), got \(error)", sourceLocation: sourceLocation)
        return error
    }
}

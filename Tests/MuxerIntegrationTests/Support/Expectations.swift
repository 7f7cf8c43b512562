import Shared
import Testing

/// Records an issue unless `body` throws a ``MuxerError`` with `code`; returns the error.
@discardableResult
func expectMuxerError<T>(_ code: MuxerError.Code, _ what: String = "", sourceLocation: SourceLocation = #_sourceLocation,
                         _ body: () throws(MuxerError) -> T) -> MuxerError? {
    do {
        let value = try body()
        Issue.record("\(what): expected \(code), got \(value)", sourceLocation: sourceLocation)
        return nil
    } catch {
        #expect(error.code == code, "\(what): expected \(code), got \(error)", sourceLocation: sourceLocation)
        return error
    }
}

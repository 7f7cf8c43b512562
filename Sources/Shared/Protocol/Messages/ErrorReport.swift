import NIOCore

/// Either direction (protocol.md §6.5, codes in §8). With scope `connection` the
/// sender closes the connection after sending it; with scope `session` the open
/// session ends and the connection stays up.
public struct ErrorReport: Sendable, Hashable {
    public var code: ProtocolError.Code
    public var scope: ProtocolError.Scope
    public var message: String

    public init(code: ProtocolError.Code, scope: ProtocolError.Scope, message: String) {
        self.code = code
        self.scope = scope
        self.message = message
    }

    /// A report of `error`, its message shortened (at a character boundary) to fit `maxBytes`.
    public init(_ error: ProtocolError, maxBytes: Int = ProtocolLimits.default.maxStringBytes) {
        var message = error.message
        while message.utf8.count > maxBytes { message.removeLast() }
        self.init(code: error.code, scope: error.scope, message: message)
    }

    /// The report as an error value, e.g. to throw on the receiving side.
    public var error: ProtocolError { ProtocolError(code, scope: scope, message) }
}

extension ByteBuffer {
    mutating func readErrorReport(limits: ProtocolLimits) throws(ProtocolError) -> ErrorReport {
        let code = ProtocolError.Code(rawValue: try readWire("Error.code"))
        let rawScope = try readWire("Error.scope", as: UInt8.self)
        guard let scope = ProtocolError.Scope(rawValue: rawScope) else {
            throw .invalid("Error.scope", "\(rawScope) is neither 1 (session) nor 2 (connection)")
        }
        return ErrorReport(code: code, scope: scope, message: try readUTF8("Error.message", max: limits.maxStringBytes))
    }

    mutating func writeErrorReport(_ report: ErrorReport, limits: ProtocolLimits) throws(ProtocolError) {
        writeInteger(report.code.rawValue)
        writeInteger(report.scope.rawValue)
        try writeUTF8(report.message, "Error.message", max: limits.maxStringBytes)
    }
}

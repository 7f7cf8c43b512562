import Foundation

/// Waits for a state, not for a time: polls `body` every 100 ms until it returns a value,
/// and fails after `seconds` with what it was waiting for. The bound only stops a broken run;
/// no test asserts on how long anything took.
public func eventually<T>(_ what: String, seconds: Double = 30, _ body: () throws -> T?) async throws -> T {
    try await eventually(what, seconds: seconds) { () async throws -> T? in try body() }
}

/// ``eventually(_:seconds:_:)`` for a check that awaits (one that runs a tool through
/// ``offPool(_:)``, so as not to hold a thread of the cooperative pool while it waits).
public func eventually<T>(_ what: String, seconds: Double = 30, _ body: () async throws -> T?) async throws -> T {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while true {
        if let value = try await body() { return value }
        guard ContinuousClock.now < deadline else { throw WaitTimedOut(what: what, seconds: seconds) }
        try await Task.sleep(for: .milliseconds(100))
    }
}

public struct WaitTimedOut: Error, CustomStringConvertible {
    public var what: String
    public var seconds: Double
    public var description: String { "timed out after \(seconds) s waiting for \(what)" }
}

/// A generator returning a fixed sequence of values (then repeating the last): the agent's
/// reconnect jitter where a test decides it (`ScriptedRandom(values: [0])`: no jitter).
/// For a seeded stream of values, `SplitMix64` (in `Shared`).
public struct ScriptedRandom: RandomNumberGenerator, Sendable {
    public var values: [UInt64]
    public var index = 0

    public init(values: [UInt64]) { self.values = values }

    public mutating func next() -> UInt64 {
        defer { index += 1 }
        return values[min(index, values.count - 1)]
    }
}

import NIOCore

/// A key/value annotation of a session, e.g. `room=studio-2` (protocol.md §4.4).
/// Label sets keep their order on the wire; keys are unique within a set.
public struct Label: Sendable, Hashable {
    public var key: Identifier
    public var value: String

    public init(_ key: Identifier, _ value: String) {
        self.key = key
        self.value = value
    }
}

extension ByteBuffer {
    /// u8 count (≤ maxLabels), then count × (identifier key, string value).
    mutating func readLabels(limits: ProtocolLimits) throws(ProtocolError) -> [Label] {
        let count = Int(try readWire("labels.count", as: UInt8.self))
        guard count <= limits.maxLabels else {
            throw ProtocolError(.tooManyLabels, "\(count) labels, at most \(limits.maxLabels)")
        }
        var labels: [Label] = []
        labels.reserveCapacity(count)
        for _ in 0..<count {
            let key = try readIdentifier("label.key")
            let value = try readUTF8("label.value", max: limits.maxStringBytes)
            guard !labels.contains(where: { $0.key == key }) else {
                throw ProtocolError(.duplicateLabel, "label key \"\(key)\" appears twice")
            }
            labels.append(Label(key, value))
        }
        return labels
    }

    mutating func writeLabels(_ labels: [Label], limits: ProtocolLimits) throws(ProtocolError) {
        guard labels.count <= min(limits.maxLabels, Int(UInt8.max)) else {
            throw ProtocolError(.tooManyLabels, "\(labels.count) labels, at most \(limits.maxLabels)")
        }
        writeInteger(UInt8(labels.count))
        for label in labels {
            writeIdentifier(label.key)
            try writeUTF8(label.value, "label.value", max: limits.maxStringBytes)
        }
    }
}

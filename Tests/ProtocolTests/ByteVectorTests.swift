import TestSupport
import Foundation
import NIOCore
import Testing
import WireProtocol

@Suite("Byte vectors (protocol.md §10)")
struct ByteVectorTests {
    @Test("encoder produces the annotated bytes", arguments: Fixtures.all.map(\.name))
    func encodesVector(name: String) throws {
        let fixture = try #require(Fixtures.all.first { $0.name == name })
        #expect(hex(try encode(fixture.message)) == hex(bytes(fixture.vector)))
    }

    @Test("parser reads the annotated bytes", arguments: Fixtures.all.map(\.name))
    func parsesVector(name: String) throws {
        let fixture = try #require(Fixtures.all.first { $0.name == name })
        let result = parse(bytes(fixture.vector))
        #expect(result.error == nil)
        #expect(result.messages == [fixture.message])
    }

    @Test("every message type defined by the protocol has a vector")
    func everyTypeCovered() {
        let covered = Set(Fixtures.all.map(\.message.type))
        #expect(covered == Set(MessageType.known.keys))
        #expect(Fixtures.all.count == 21, "one per type, and the scheduled forms of StartSession and StopSession")
    }

    @Test("header layout: magic, version, type, flags, big-endian length")
    func headerLayout() throws {
        let encoded = try encode(Fixtures.heartbeat)
        #expect(Array(encoded.prefix(12)) == [0x4D, 0x43, 0x52, 0x50, 0x01, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10])
        #expect(encoded.count == 12 + 16)
    }

    /// protocol.md must show exactly these bytes, so an implementer reading only the
    /// document sees what the code does.
    @Test("docs/protocol.md hex examples match the vectors")
    func docsMatchVectors() throws {
        let docs = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/protocol.md")
        guard let text = try? String(contentsOf: docs, encoding: .utf8) else {
            // The test bundle may run outside the source tree; nothing to compare then.
            return
        }
        var blocks: Set<String> = []
        let parts = text.components(separatedBy: "```hex\n")
        for part in parts.dropFirst() {
            let block = part.components(separatedBy: "```").first ?? ""
            blocks.insert(hex(bytes(block)))
        }
        for fixture in Fixtures.all {
            let documented = blocks.contains(hex(bytes(fixture.vector)))
            #expect(documented, "docs/protocol.md lacks the exact \(fixture.name) example")
        }
    }
}

import NIOCore
import Testing
import WireProtocol

/// A frame with an explicit header; `length` defaults to the payload size.
func frame(_ type: UInt8, _ payload: [UInt8], version: UInt8 = 1, flags: UInt16 = 0, length: UInt32? = nil) -> [UInt8] {
    let n = length ?? UInt32(payload.count)
    return [0x4D, 0x43, 0x52, 0x50, version, type, UInt8(flags >> 8), UInt8(flags & 0xFF),
            UInt8(n >> 24), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)] + payload
}

func u16(_ v: Int) -> [UInt8] { [UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
func u32(_ v: Int) -> [UInt8] { [UInt8(v >> 24 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
func u64(_ v: UInt64) -> [UInt8] { (0..<8).map { UInt8(v >> (56 - 8 * UInt64($0)) & 0xFF) } }
func ident(_ s: String) -> [UInt8] { [UInt8(s.utf8.count)] + Array(s.utf8) }
func str(_ s: [UInt8]) -> [UInt8] { u16(s.count) + s }
func str(_ s: String) -> [UInt8] { str(Array(s.utf8)) }

/// The payload of a fixture vector (its bytes after the 12-byte header).
func payload(_ vector: String) -> [UInt8] { Array(bytes(vector).dropFirst(12)) }

/// A SessionOpen payload with the given tracks (each a descriptor's bytes).
func sessionOpenPayload(labels: [UInt8] = [0], trackCount: Int? = nil, tracks: [[UInt8]]) -> [UInt8] {
    ident("s1") + labels + [UInt8(trackCount ?? tracks.count)] + tracks.flatMap { $0 }
}

/// Descriptor bytes: id, kind, codec, width, height, rotation, sampleRate, channels, timescale, label, config.
func descriptor(id: UInt8 = 1, kind: UInt8 = 1, codec: UInt8 = 1, width: Int = 640, height: Int = 480, rotation: Int = 0,
                sampleRate: Int = 0, channels: UInt8 = 0, label: [UInt8] = Array("cam".utf8), config: [UInt8]? = nil) -> [UInt8] {
    let h264 = [1] + u16(4) + Fixtures.sps + [1] + u16(4) + Fixtures.pps
    let cfg = config ?? h264
    return [id, kind, codec] + u16(width) + u16(height) + u16(rotation) + u32(sampleRate) + [channels] + u32(0)
        + str(label) + u32(cfg.count) + cfg
}

func opusDescriptor(id: UInt8 = 2, channels: UInt8 = 1, head: [UInt8] = Fixtures.opusHead) -> [UInt8] {
    descriptor(id: id, kind: 2, codec: 2, width: 0, height: 0, sampleRate: 48_000, channels: channels, config: head)
}

@Suite("Malformed input: each class has its own error (protocol.md §8)")
struct MalformedInputTests {
    struct Case: Sendable {
        var name: String
        var bytes: [UInt8]
        var code: ProtocolError.Code
    }

    static let sampleHeader: [UInt8] = [1, 0] + u64(1) + u64(0) + u64(0) + u64(0)

    static let cases: [Case] = [
        // Framing (§3)
        Case(name: "bad magic", bytes: [0x4D, 0x43, 0x52, 0x51] + Array(bytes(Vectors.ack).dropFirst(4)), code: .badMagic),
        Case(name: "unsupported version", bytes: frame(0x21, payload(Vectors.ack), version: 2), code: .unsupportedVersion),
        Case(name: "version 0", bytes: frame(0x21, payload(Vectors.ack), version: 0), code: .unsupportedVersion),
        Case(name: "unknown type", bytes: frame(0x7F, []), code: .unknownMessageType),
        Case(name: "reserved header flags", bytes: frame(0x21, payload(Vectors.ack), flags: 0x0100), code: .reservedBitsSet),
        Case(name: "length over the limit", bytes: frame(0x20, [], length: 8 * 1024 * 1024 + 1), code: .frameTooLarge),
        Case(name: "length 4 GiB", bytes: frame(0x20, [], length: .max), code: .frameTooLarge),
        // Field decoding (§4, §6)
        Case(name: "truncated Ack sequence", bytes: frame(0x21, Array(payload(Vectors.ack).dropLast())), code: .truncatedField),
        Case(name: "truncated Sample header", bytes: frame(0x20, Array(sampleHeader.prefix(33))), code: .truncatedField),
        Case(name: "truncated string", bytes: frame(0x14, ident("s1") + u16(10) + Array("short".utf8)), code: .truncatedField),
        Case(name: "truncated identifier", bytes: frame(0x31, [5, 0x61, 0x62]), code: .truncatedField),
        Case(name: "empty Heartbeat", bytes: frame(0x03, []), code: .truncatedField),
        Case(name: "trailing bytes", bytes: frame(0x21, payload(Vectors.ack) + [0]), code: .trailingBytes),
        Case(name: "invalid UTF-8 label value", bytes: frame(0x30, [1] + ident("room") + str([0x61, 0xC3, 0x28])), code: .invalidUTF8),
        Case(name: "invalid UTF-8 track label", bytes: frame(0x10, sessionOpenPayload(tracks: [descriptor(label: [0xFF, 0xFE])])), code: .invalidUTF8),
        Case(name: "overlong UTF-8", bytes: frame(0x14, ident("s1") + str([0xC0, 0xAF])), code: .invalidUTF8),
        Case(name: "UTF-8 surrogate", bytes: frame(0x14, ident("s1") + str([0xED, 0xA0, 0x80])), code: .invalidUTF8),
        Case(name: "session id with a slash", bytes: frame(0x31, ident("a/b")), code: .invalidIdentifier),
        Case(name: "session id ..", bytes: frame(0x31, ident("..")), code: .invalidIdentifier),
        Case(name: "empty session id", bytes: frame(0x31, [0]), code: .invalidIdentifier),
        Case(name: "session id of 65 bytes", bytes: frame(0x31, ident(String(repeating: "a", count: 65))), code: .invalidIdentifier),
        Case(name: "non-ASCII label key", bytes: frame(0x30, [1, 2, 0xC3, 0xA4] + str("v")), code: .invalidIdentifier),
        Case(name: "string over the limit", bytes: frame(0x14, ident("s1") + u16(1025) + [UInt8](repeating: 0x61, count: 1025)), code: .stringTooLong),
        Case(name: "bearer token over the limit", bytes: frame(0x01, [1, 1] + u32(0) + ident("a") + str("") + u16(4097)), code: .stringTooLong),
        Case(name: "bad enum value", bytes: frame(0x22, [1, 9] + str("")), code: .invalidField),
        Case(name: "sequence 0", bytes: frame(0x20, [1, 0] + u64(0) + u64(0) + u64(0) + u64(0)), code: .invalidField),
        Case(name: "negative duration", bytes: frame(0x20, [1, 0] + u64(1) + u64(0) + u64(0) + u64(UInt64.max)), code: .invalidField),
        Case(name: "empty version range", bytes: frame(0x01, [2, 1] + u32(0) + ident("a") + str("") + str("")), code: .invalidField),
        Case(name: "drop count 0", bytes: frame(0x23, [1, 1] + u32(0)), code: .invalidField),
        Case(name: "reserved sample flags", bytes: frame(0x20, [1, 0x80] + u64(1) + u64(0) + u64(0) + u64(0)), code: .reservedBitsSet),
        Case(name: "too many labels", bytes: frame(0x30, [33]), code: .tooManyLabels),
        Case(name: "duplicate label", bytes: frame(0x30, [2] + ident("k") + str("1") + ident("k") + str("2")), code: .duplicateLabel),
        Case(name: "too many tracks", bytes: frame(0x10, sessionOpenPayload(trackCount: 17, tracks: [])), code: .tooManyTracks),
        Case(name: "no tracks", bytes: frame(0x10, sessionOpenPayload(tracks: [])), code: .invalidField),
        Case(name: "duplicate track id", bytes: frame(0x10, sessionOpenPayload(tracks: [descriptor(id: 3), descriptor(id: 3)])), code: .duplicateTrack),
        Case(name: "rotation 45", bytes: frame(0x10, sessionOpenPayload(tracks: [descriptor(rotation: 45)])), code: .invalidTrackDescriptor),
        Case(name: "video without width", bytes: frame(0x10, sessionOpenPayload(tracks: [descriptor(width: 0)])), code: .invalidTrackDescriptor),
        Case(name: "kind/codec mismatch", bytes: frame(0x10, sessionOpenPayload(tracks: [descriptor(kind: 2, codec: 1)])), code: .invalidTrackDescriptor),
        Case(name: "codec config over the limit", bytes: frame(0x10, sessionOpenPayload(tracks: [Array(descriptor().prefix(23)) + u32(64 * 1024 + 1)])), code: .codecConfigTooLarge),
        Case(name: "SPS with the wrong NAL type", bytes: frame(0x10, sessionOpenPayload(tracks: [descriptor(config: [1] + u16(1) + [0x68] + [1] + u16(1) + [0x68])])), code: .invalidCodecConfig),
        Case(name: "no PPS", bytes: frame(0x10, sessionOpenPayload(tracks: [descriptor(config: [1] + u16(1) + [0x67] + [0])])), code: .invalidCodecConfig),
        Case(name: "OpusHead channel mismatch", bytes: frame(0x10, sessionOpenPayload(tracks: [opusDescriptor(channels: 2)])), code: .invalidCodecConfig),
        Case(name: "OpusHead magic", bytes: frame(0x10, sessionOpenPayload(tracks: [opusDescriptor(head: Array("OpusTags".utf8) + [UInt8](repeating: 1, count: 11))])), code: .invalidCodecConfig),
    ]

    @Test("each malformed input yields its specific error", arguments: cases.map(\.name))
    func specificError(name: String) throws {
        let bad = try #require(MalformedInputTests.cases.first { $0.name == name })
        let error = try #require(parseError(bad.bytes))
        #expect(error.code == bad.code, "\(error)")
        #expect(error.scope == .connection)
    }

    @Test("a truncated field names the field")
    func truncatedFieldNamed() throws {
        let error = try #require(parseError(frame(0x21, Array(payload(Vectors.ack).dropLast()))))
        #expect(error.message == "truncated field Ack.sequence")
    }

    @Test("every fixture truncated by one payload byte (length fixed up) is truncatedField or a specific error",
          arguments: Fixtures.all.map(\.name))
    func truncatedFixtures(name: String) throws {
        let fixture = try #require(Fixtures.all.first { $0.name == name })
        let p = payload(fixture.vector)
        let type = bytes(fixture.vector)[5]
        let error = parseError(frame(type, Array(p.dropLast())))
        // A sample's data runs to the end of the payload, so dropping a byte is a valid sample.
        if name == "Sample" {
            #expect(error == nil)
        } else {
            let code = try #require(error?.code)
            #expect([.truncatedField, .invalidCodecConfig].contains(code), "\(name): \(code)")
        }
    }

    @Test("the frame size limit is checked from the header alone")
    func limitBeforePayload() throws {
        var parser = MessageParser(limits: ProtocolLimits(maxFramePayload: 16))
        parser.append(buffer(frame(0x20, [], length: 17)))
        #expect(throws: ProtocolError(.frameTooLarge, "")) { try parser.nextMessage() }
        // Only the header was ever buffered.
        #expect(parser.bufferedByteCount == 12)
    }

    @Test("header errors are reported as soon as the 12 header bytes arrive")
    func headerErrorEarly() throws {
        var parser = FrameParser()
        parser.append(buffer(Array(frame(0x7F, []).prefix(11))))
        #expect(try parser.nextFrame() == nil)
        parser.append(buffer([0]))
        #expect(throws: ProtocolError(.unknownMessageType, "")) { try parser.nextFrame() }
    }

    @Test("after an error the parser stays failed")
    func poisoned() throws {
        var parser = MessageParser()
        parser.append(buffer(frame(0x7F, [])))
        #expect(throws: ProtocolError(.unknownMessageType, "")) { try parser.nextMessage() }
        parser.append(buffer(bytes(Vectors.ack)))
        #expect(throws: ProtocolError(.unknownMessageType, "")) { try parser.nextMessage() }
    }

    @Test("limits announced lower than the ceiling are enforced")
    func lowerLimits() {
        let limits = ProtocolLimits(maxTracksPerSession: 1, maxLabels: 0, maxStringBytes: 2)
        #expect(parseError(bytes(Vectors.sessionOpen), limits: limits)?.code == .tooManyLabels)
        #expect(parseError(bytes(Vectors.startSession), limits: limits)?.code == .tooManyLabels)
        #expect(parseError(bytes(Vectors.sessionCancel), limits: limits)?.code == .stringTooLong)
        #expect(parseError(frame(0x10, sessionOpenPayload(tracks: [descriptor(id: 1), descriptor(id: 2)])), limits: limits)?.code == .tooManyTracks)
    }

    @Test("identifier rules (§4.3)")
    func identifiers() {
        for valid in ["a", "0", "A.b_c-9", "cam-a-2024-05-01T10.00.00Z", String(repeating: "x", count: 64)] {
            #expect((try? Identifier(validating: valid)) != nil, "\(valid)")
        }
        for invalid in ["", ".", "..", ".hidden", "-a", "_a", "a b", "a/b", "a\\b", "ä", "a\u{0}", String(repeating: "x", count: 65)] {
            #expect(throws: ProtocolError(.invalidIdentifier, "")) { try Identifier(validating: invalid) }
        }
    }

    @Test("ProtocolError equality is by code")
    func errorEquality() {
        #expect(ProtocolError(.badMagic, "a") == ProtocolError(.badMagic, "b"))
        #expect(ProtocolError(.badMagic, "a") != ProtocolError(.unsupportedVersion, "a"))
        #expect(ProtocolError.Code.badMagic.description == "badMagic(0x0001)")
        #expect(throws: ProtocolError(.invalidIdentifier, "")) { try Identifier(validating: "../etc") }
    }
}

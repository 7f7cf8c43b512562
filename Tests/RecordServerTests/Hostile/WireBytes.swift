/// MCRP frames as bytes, written from docs/protocol.md alone (§3 framing, §4 encodings, §6
/// layouts, §8 codes) and deliberately *not* through `WireProtocol`: a hostile peer must be
/// able to say what our own encoder never would (wrong lengths, bad ids, reserved bits), and
/// the suite checks the spec rather than the implementation agreeing with itself.
enum Wire {
    static let magic: [UInt8] = [0x4D, 0x43, 0x52, 0x50]  // "MCRP"
    static let headerSize = 12
    /// §9: the ceiling of `maxFramePayload`.
    static let maxFramePayload = 8 << 20
    /// Sample payload before its data (§6.12).
    static let sampleFixedBytes = 34

    /// §6 message types (only the numbers; the suite never needs the others' names).
    enum Kind: UInt8 {
        case hello = 0x01, helloReply = 0x02, heartbeat = 0x03, heartbeatReply = 0x04, error = 0x05
        case sessionOpen = 0x10, sessionResume = 0x11, sessionAccepted = 0x12, sessionClose = 0x13
        case sessionCancel = 0x14, sessionClosed = 0x15
        case sample = 0x20, ack = 0x21, trackEnd = 0x22, dropReport = 0x23
    }

    /// §8 error codes plus the additive ones of the issue-14 design note.
    enum Code: UInt16 {
        case badMagic = 0x0001, unsupportedVersion = 0x0002, unknownMessageType = 0x0003, frameTooLarge = 0x0004
        case reservedBitsSet = 0x0005
        case truncatedField = 0x0010, trailingBytes = 0x0011, invalidUTF8 = 0x0012, invalidIdentifier = 0x0013
        case stringTooLong = 0x0014, invalidField = 0x0015, tooManyLabels = 0x0016, duplicateLabel = 0x0017
        case tooManyTracks = 0x0018, duplicateTrack = 0x0019, invalidTrackDescriptor = 0x001A
        case codecConfigTooLarge = 0x001B, invalidCodecConfig = 0x001C
        case handshakeRequired = 0x0020, unexpectedMessage = 0x0021, noCommonVersion = 0x0022
        case authenticationFailed = 0x0023
        case sessionAlreadyOpen = 0x0030, noOpenSession = 0x0031, sessionMismatch = 0x0032, unknownTrack = 0x0033
        case nonMonotonicSequence = 0x0034, sequenceGap = 0x0035, trackEnded = 0x0036, unknownSession = 0x0037
        case sessionBusy = 0x0038, finalSequenceMismatch = 0x0039, timestampOutOfRange = 0x003A, sampleRefused = 0x003B
        case captureFailed = 0x003C, trackFailed = 0x003D
        case internalError = 0x0040, storageFailure = 0x0041, resourceExhausted = 0x0042, shuttingDown = 0x0043
        case idleTimeout = 0x0044, frameTooSlow = 0x0045, budgetExhausted = 0x0046

        /// e.g. `sampleRefused(0x3b)`; the case name comes from default reflection.
        var label: String { "\(self)(0x\(String(rawValue, radix: 16)))" }
    }

    /// §6.5 scope.
    enum Scope: UInt8 { case session = 1, connection = 2 }

    /// A frame: the 12-byte header of §3 with every field settable, then the payload.
    /// `length` defaults to the payload's size; hostile cases override it.
    static func frame(_ type: UInt8, _ payload: [UInt8], version: UInt8 = 1, flags: UInt16 = 0, length: UInt32? = nil,
                      magic: [UInt8] = Wire.magic) -> [UInt8] {
        var w = WireWriter()
        w.raw(magic)
        w.u8(version)
        w.u8(type)
        w.u16(flags)
        w.u32(length ?? UInt32(payload.count))
        w.raw(payload)
        return w.bytes
    }

    static func frame(_ kind: Kind, _ payload: [UInt8]) -> [UInt8] { frame(kind.rawValue, payload) }

    /// §6.1. Capabilities default to `resume`.
    static func hello(agentID: [UInt8], minVersion: UInt8 = 1, maxVersion: UInt8 = 1, capabilities: UInt32 = 1,
                      software: [UInt8] = Array("hostile/1".utf8), token: [UInt8] = []) -> [UInt8] {
        var w = WireWriter()
        w.u8(minVersion)
        w.u8(maxVersion)
        w.u32(capabilities)
        w.id(agentID)
        w.str(software)
        w.str(token)
        return frame(.hello, w.bytes)
    }

    static func hello(_ agentID: String) -> [UInt8] { hello(agentID: Array(agentID.utf8)) }

    /// §6.6.1, an Opus track: the descriptor rows for audio (48 kHz, `channels`, no video fields).
    struct Track {
        var id: UInt8 = 0
        var kind: UInt8 = 2
        var codec: UInt8 = 2
        var width: UInt16 = 0
        var height: UInt16 = 0
        var rotation: UInt16 = 0
        var sampleRate: UInt32 = 48000
        var channels: UInt8 = 1
        var timescale: UInt32 = 48000
        var label: [UInt8] = Array("mic".utf8)
        var codecConfig: [UInt8]

        func encode(into w: inout WireWriter) {
            w.u8(id)
            w.u8(kind)
            w.u8(codec)
            w.u16(width)
            w.u16(height)
            w.u16(rotation)
            w.u32(sampleRate)
            w.u8(channels)
            w.u32(timescale)
            w.str(label)
            w.u32(UInt32(codecConfig.count))
            w.raw(codecConfig)
        }
    }

    /// §6.6. `trackCount` defaults to the number of tracks given.
    static func sessionOpen(id: [UInt8], labels: [([UInt8], [UInt8])] = [], tracks: [Track], trackCount: UInt8? = nil) -> [UInt8] {
        var w = WireWriter()
        w.id(id)
        w.u8(UInt8(labels.count))
        for (key, value) in labels {
            w.id(key)
            w.str(value)
        }
        w.u8(trackCount ?? UInt8(tracks.count))
        for track in tracks { track.encode(into: &w) }
        return frame(.sessionOpen, w.bytes)
    }

    /// §6.12: the 34 fixed bytes, then the data.
    static func samplePayload(track: UInt8, flags: UInt8 = 1, sequence: UInt64, pts: Int64, dts: Int64, duration: Int64,
                              data: [UInt8]) -> [UInt8] {
        var w = WireWriter()
        w.u8(track)
        w.u8(flags)
        w.u64(sequence)
        w.i64(pts)
        w.i64(dts)
        w.i64(duration)
        w.raw(data)
        return w.bytes
    }

    static func sample(track: UInt8 = 0, flags: UInt8 = 1, sequence: UInt64, pts: Int64, dts: Int64, duration: Int64 = 20_000_000,
                       data: [UInt8]) -> [UInt8] {
        frame(.sample, samplePayload(track: track, flags: flags, sequence: sequence, pts: pts, dts: dts, duration: duration, data: data))
    }

    /// §6.9.
    static func sessionClose(id: [UInt8], finalSequence: UInt64) -> [UInt8] {
        var w = WireWriter()
        w.id(id)
        w.u64(finalSequence)
        return frame(.sessionClose, w.bytes)
    }

    /// §6.10.
    static func sessionCancel(id: [UInt8], reason: [UInt8]) -> [UInt8] {
        var w = WireWriter()
        w.id(id)
        w.str(reason)
        return frame(.sessionCancel, w.bytes)
    }

    /// §6.7.
    static func sessionResume(id: [UInt8], lastAcknowledged: UInt64) -> [UInt8] {
        var w = WireWriter()
        w.id(id)
        w.u64(lastAcknowledged)
        return frame(.sessionResume, w.bytes)
    }

    /// §6.3.
    static func heartbeat(nonce: UInt64, originTime: Int64 = 0) -> [UInt8] {
        var w = WireWriter()
        w.u64(nonce)
        w.i64(originTime)
        return frame(.heartbeat, w.bytes)
    }

    /// §6.4, answering a server heartbeat: nonce, t1 (unknown here: 0), t2, t3.
    static func heartbeatReplyPayload(nonce: UInt64) -> [UInt8] {
        var w = WireWriter()
        w.u64(nonce)
        w.i64(0)
        w.i64(0)
        w.i64(0)
        return w.bytes
    }
}

/// Big-endian writer for §4's encodings. `id` and `str` write whatever bytes they are given,
/// with their length prefix: validity is the receiver's business.
struct WireWriter {
    var bytes: [UInt8] = []

    mutating func u8(_ v: UInt8) { bytes.append(v) }
    mutating func u16(_ v: UInt16) { bytes += [UInt8(v >> 8), UInt8(v & 0xFF)] }
    mutating func u32(_ v: UInt32) { for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8((v >> UInt32(shift)) & 0xFF)) } }
    mutating func u64(_ v: UInt64) { for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8((v >> UInt64(shift)) & 0xFF)) } }
    mutating func i64(_ v: Int64) { u64(UInt64(bitPattern: v)) }
    mutating func raw(_ b: [UInt8]) { bytes += b }
    /// §4.3: u8 length, then the bytes.
    mutating func id(_ b: [UInt8]) {
        u8(UInt8(truncatingIfNeeded: b.count))
        raw(b)
    }
    /// §4.2: u16 length, then the bytes.
    mutating func str(_ b: [UInt8]) {
        u16(UInt16(truncatingIfNeeded: b.count))
        raw(b)
    }
}

/// Big-endian reader of what the server sends; throws on a short payload.
struct WireReader {
    let bytes: [UInt8]
    var index = 0

    struct Short: Error {}

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func take(_ n: Int) throws -> ArraySlice<UInt8> {
        guard n >= 0, index + n <= bytes.count else { throw Short() }
        defer { index += n }
        return bytes[index..<(index + n)]
    }
    mutating func u8() throws -> UInt8 { try take(1).first! }
    mutating func u16() throws -> UInt16 { try take(2).reduce(0) { $0 << 8 | UInt16($1) } }
    mutating func u32() throws -> UInt32 { try take(4).reduce(0) { $0 << 8 | UInt32($1) } }
    mutating func u64() throws -> UInt64 { try take(8).reduce(0) { $0 << 8 | UInt64($1) } }
    mutating func id() throws -> String { String(decoding: try take(Int(try u8())), as: UTF8.self) }
    mutating func str() throws -> String { String(decoding: try take(Int(try u16())), as: UTF8.self) }
}

/// A frame the server sent, decoded as far as the suite needs (§6.2, 6.5, 6.8, 6.11, 6.13).
enum ServerMessage: CustomStringConvertible {
    case helloReply(idleTimeoutMillis: UInt32, maxFramePayload: UInt32)
    case error(code: UInt16, scope: UInt8, message: String)
    case sessionAccepted(id: String, acknowledged: UInt64)
    case sessionClosed(id: String, outcome: UInt8, durableSequence: UInt64)
    case ack(id: String, sequence: UInt64)
    case heartbeat(nonce: UInt64)
    case heartbeatReply(nonce: UInt64)
    case other(type: UInt8)

    init(type: UInt8, payload: [UInt8]) throws {
        var r = WireReader(payload)
        switch Wire.Kind(rawValue: type) {
        case .helloReply:
            _ = try r.u8(); _ = try r.u32(); _ = try r.id(); _ = try r.str()
            let maxFrame = try r.u32()
            _ = try r.u8(); _ = try r.u8(); _ = try r.u16(); _ = try r.u32(); _ = try r.u32()
            self = .helloReply(idleTimeoutMillis: try r.u32(), maxFramePayload: maxFrame)
        case .error: self = .error(code: try r.u16(), scope: try r.u8(), message: try r.str())
        case .sessionAccepted: self = .sessionAccepted(id: try r.id(), acknowledged: try r.u64())
        case .sessionClosed: self = .sessionClosed(id: try r.id(), outcome: try r.u8(), durableSequence: try r.u64())
        case .ack: self = .ack(id: try r.id(), sequence: try r.u64())
        case .heartbeat: self = .heartbeat(nonce: try r.u64())
        case .heartbeatReply: self = .heartbeatReply(nonce: try r.u64())
        default: self = .other(type: type)
        }
    }

    var errorCode: Wire.Code? { if case .error(let code, _, _) = self { Wire.Code(rawValue: code) } else { nil } }

    var description: String {
        switch self {
        case .error(let code, let scope, let message):
            "Error \(Wire.Code(rawValue: code)?.label ?? "0x\(String(code, radix: 16))") scope \(scope == 1 ? "session" : scope == 2 ? "connection" : "\(scope)") \"\(message)\""
        case .helloReply: "HelloReply"
        case .sessionAccepted(let id, let ack): "SessionAccepted(\(id), \(ack))"
        case .sessionClosed(let id, let outcome, let durable): "SessionClosed(\(id), outcome \(outcome), durable \(durable))"
        case .ack(let id, let seq): "Ack(\(id), \(seq))"
        case .heartbeat(let nonce): "Heartbeat(\(nonce))"
        case .heartbeatReply(let nonce): "HeartbeatReply(\(nonce))"
        case .other(let type): "frame type 0x\(String(type, radix: 16))"
        }
    }
}

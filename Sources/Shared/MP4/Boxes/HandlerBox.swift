/// `hdlr` (§8.4.3): the media kind (`vide`/`soun`) and a name. We put the source label
/// ("front", "back", "mic") in the name; ffprobe shows it as the stream's `handler_name`.
public struct HandlerBox: DecodableBox, Equatable {
    public static let boxType: FourCC = "hdlr"
    public var handlerType: FourCC
    public var name: String

    public init(handlerType: FourCC, name: String) {
        self.handlerType = handlerType
        self.name = name
    }

    public var payloadSize: Int { 4 + 4 + 4 + 12 + name.utf8.count + 1 }

    public func encodePayload(into w: inout ByteWriter) {
        w.fullBoxHeader(version: 0, flags: 0)
        w.u32(0)
        w.fourCC(handlerType)
        w.zeros(12)
        w.append(name.utf8)
        w.u8(0)
    }

    public init(payload r: inout ByteReader) throws(MP4ParseError) {
        _ = try r.fullBoxHeader()
        try r.skip(4)
        handlerType = try r.fourCC("handler_type")
        try r.skip(12)
        var bytes = r.rest()
        if let nul = bytes.firstIndex(of: 0) { bytes.removeSubrange(nul...) }
        name = String(decoding: bytes, as: UTF8.self)
    }
}

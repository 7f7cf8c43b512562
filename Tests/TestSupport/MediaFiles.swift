/// Bytes of the media files the agent reads as sources (`y4m:` and `wav:`), written by the
/// tests themselves so that what goes in is known exactly.

/// A y4m file: the header line, then each frame after a FRAME line.
public func y4m(header: String, frames: [[UInt8]]) -> [UInt8] {
    var bytes = Array((header + "\n").utf8)
    for f in frames { bytes += Array("FRAME\n".utf8) + f }
    return bytes
}

/// A WAV file of 16-bit PCM (or another format tag), optionally WAVE_FORMAT_EXTENSIBLE, with a LIST chunk to skip.
public func wav(format: UInt16 = 1, channels: UInt16 = 1, rate: UInt32 = 48000, bits: UInt16 = 16, samples: [Int16], extensible: Bool = false) -> [UInt8] {
    func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
    func le32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8((v >> (8 * $0)) & 0xFF) } }
    let blockAlign = channels * bits / 8
    var fmt = le16(extensible ? 0xFFFE : format) + le16(channels) + le32(rate) + le32(rate * UInt32(blockAlign)) + le16(blockAlign) + le16(bits)
    if extensible { fmt += le16(22) + le16(bits) + le32(0) + le16(format) + [UInt8](repeating: 0, count: 14) }
    let data = samples.flatMap { le16(UInt16(bitPattern: $0)) }
    var body = Array("WAVE".utf8)
    body += Array("fmt ".utf8) + le32(UInt32(fmt.count)) + fmt
    body += Array("LIST".utf8) + le32(4) + Array("INFO".utf8)
    body += Array("data".utf8) + le32(UInt32(data.count)) + data
    return Array("RIFF".utf8) + le32(UInt32(body.count)) + body
}

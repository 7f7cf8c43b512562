/// A minimal Ogg Opus writer (RFC 3533 pages, RFC 7845 mapping), only so that ffmpeg can
/// check our Opus packets independently.
enum OggOpusWriter {
    /// Ogg's CRC-32: polynomial 0x04C11DB7, initial value 0, no reflection, no final XOR.
    static let crcTable: [UInt32] = (0..<256).map { i in
        var r = UInt32(i) << 24
        for _ in 0..<8 {
            r = (r & 0x8000_0000) != 0 ? (r << 1) ^ 0x04C1_1DB7 : r << 1
        }
        return r
    }

    static func crc(_ bytes: [UInt8]) -> UInt32 {
        var c: UInt32 = 0
        for b in bytes {
            c = (c << 8) ^ crcTable[Int(((c >> 24) ^ UInt32(b)) & 0xFF)]
        }
        return c
    }

    /// One page holding whole packets (each packet laced as 255-byte segments plus a final
    /// segment < 255).
    static func page(packets: [[UInt8]], granule: Int64, serial: UInt32, sequence: UInt32, headerType: UInt8) -> [UInt8] {
        var lacing: [UInt8] = []
        for p in packets {
            lacing.append(contentsOf: [UInt8](repeating: 255, count: p.count / 255))
            lacing.append(UInt8(p.count % 255))
        }
        precondition(lacing.count <= 255, "too many segments for one page")
        var page = Array("OggS".utf8)
        page.append(0)  // version
        page.append(headerType)
        page.append(contentsOf: le(UInt64(bitPattern: granule), 8))
        page.append(contentsOf: le(UInt64(serial), 4))
        page.append(contentsOf: le(UInt64(sequence), 4))
        page.append(contentsOf: [0, 0, 0, 0])  // CRC, filled in below
        page.append(UInt8(lacing.count))
        page.append(contentsOf: lacing)
        for p in packets { page.append(contentsOf: p) }
        let checksum = crc(page)
        page.replaceSubrange(22..<26, with: le(UInt64(checksum), 4))
        return page
    }

    /// A complete Ogg Opus file: OpusHead page, OpusTags page, then audio pages whose
    /// granule position counts 48 kHz samples (pre-skip included) up to their last packet.
    static func file(opusHead: [UInt8], packets: [[UInt8]], samplesPerPacket48k: Int, packetsPerPage: Int = 25) -> [UInt8] {
        let serial: UInt32 = 0x4D45_4E43
        var tags = Array("OpusTags".utf8)
        let vendor = Array("MediaEncodingTests".utf8)
        tags.append(contentsOf: le(UInt64(vendor.count), 4))
        tags.append(contentsOf: vendor)
        tags.append(contentsOf: le(0, 4))

        var out = page(packets: [opusHead], granule: 0, serial: serial, sequence: 0, headerType: 0x02)
        out += page(packets: [tags], granule: 0, serial: serial, sequence: 1, headerType: 0)
        var sequence: UInt32 = 2
        var done = 0
        while done < packets.count {
            let chunk = Array(packets[done..<min(packets.count, done + packetsPerPage)])
            done += chunk.count
            let last = done == packets.count
            out += page(
                packets: chunk, granule: Int64(done * samplesPerPacket48k), serial: serial,
                sequence: sequence, headerType: last ? 0x04 : 0)
            sequence += 1
        }
        return out
    }

    private static func le(_ value: UInt64, _ bytes: Int) -> [UInt8] {
        (0..<bytes).map { UInt8((value >> (8 * UInt64($0))) & 0xFF) }
    }
}

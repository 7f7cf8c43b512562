/// The percent-encoding of AWS Signature Version 4 (RFC 3986): every UTF-8 byte except the
/// unreserved characters `A–Z a–z 0–9 - _ . ~` becomes `%XX` with upper-case hex digits.
enum SigV4Encoding {
    /// A query key or value: `/` is encoded too.
    static func queryComponent(_ text: String) -> String { encode(text, keepingSlash: false) }

    /// An S3 object path: `/` separates segments and stays. S3 signs the path as it is sent,
    /// encoded once (other services encode it twice; S3 does not).
    static func path(_ text: String) -> String {
        text.isEmpty ? "/" : encode(text, keepingSlash: true)
    }

    private static func encode(_ text: String, keepingSlash: Bool) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: "/") where keepingSlash:
                out.append("/")
            default:
                out.append("%")
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 0x0F)])
            }
        }
        return out
    }

    private static let hexDigits: [Character] = Array("0123456789ABCDEF")

    /// Lower-case hex, as SigV4 writes hashes and signatures.
    static func hex<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        var out = ""
        for byte in bytes {
            out.append(lowerHexDigits[Int(byte >> 4)])
            out.append(lowerHexDigits[Int(byte & 0x0F)])
        }
        return out
    }

    private static let lowerHexDigits: [Character] = Array("0123456789abcdef")
}

/// The 3×3 display matrix of `mvhd`/`tkhd` (§8.2.2, §8.3.2): {a,b,u, c,d,v, x,y,w}, with
/// a,b,c,d,x,y in 16.16 and u,v,w in 2.30 fixed point.
public struct TransformMatrix: Equatable, Sendable {
    public var values: [Int32]

    public init(_ values: [Int32]) {
        precondition(values.count == 9)
        self.values = values
    }

    public static let identity = TransformMatrix([0x10000, 0, 0, 0, 0x10000, 0, 0, 0, 0x4000_0000])

    /// Clockwise display rotation (phone style) of a `width`×`height` picture. ffprobe reports
    /// 90° as `rotation: -90` (its display-matrix convention is counter-clockwise).
    public static func rotation(_ degrees: Int, width: Int, height: Int) -> TransformMatrix {
        let one: Int32 = 0x10000
        let w = Int32(truncatingIfNeeded: width) << 16
        let h = Int32(truncatingIfNeeded: height) << 16
        switch degrees {
        case 90: return TransformMatrix([0, one, 0, -one, 0, 0, h, 0, 0x4000_0000])
        case 180: return TransformMatrix([-one, 0, 0, 0, -one, 0, w, h, 0x4000_0000])
        case 270: return TransformMatrix([0, -one, 0, one, 0, 0, 0, w, 0x4000_0000])
        default: return .identity
        }
    }

    func encode(into w: inout ByteWriter) { values.forEach { w.i32($0) } }

    static func decode(_ r: inout ByteReader) throws(MP4ParseError) -> TransformMatrix {
        var values: [Int32] = []
        for _ in 0..<9 { values.append(try r.i32("matrix")) }
        return TransformMatrix(values)
    }
}

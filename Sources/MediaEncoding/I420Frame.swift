/// A planar YUV 4:2:0 picture (I420 / V4L2 `YU12`): a full-size Y plane followed by
/// quarter-size U and V planes, each tightly packed (stride == plane width).
public struct I420Frame: Sendable, Equatable {
    public var width: Int
    public var height: Int
    /// `width * height` luma samples.
    public var y: [UInt8]
    /// `(width / 2) * (height / 2)` Cb samples.
    public var u: [UInt8]
    /// `(width / 2) * (height / 2)` Cr samples.
    public var v: [UInt8]

    public init(width: Int, height: Int, y: [UInt8], u: [UInt8], v: [UInt8]) {
        self.width = width
        self.height = height
        self.y = y
        self.u = u
        self.v = v
    }

    /// A uniformly coloured frame (defaults: black, neutral chroma). Dimensions must be even.
    public init(width: Int, height: Int, luma: UInt8 = 16, cb: UInt8 = 128, cr: UInt8 = 128) {
        precondition(width > 0 && height > 0 && width % 2 == 0 && height % 2 == 0, "I420 needs even dimensions")
        self.width = width
        self.height = height
        self.y = [UInt8](repeating: luma, count: width * height)
        self.u = [UInt8](repeating: cb, count: (width / 2) * (height / 2))
        self.v = [UInt8](repeating: cr, count: (width / 2) * (height / 2))
    }

    /// True when the dimensions are positive and even and every plane has the exact size.
    public var isWellFormed: Bool {
        width > 0 && height > 0 && width % 2 == 0 && height % 2 == 0
            && y.count == width * height
            && u.count == (width / 2) * (height / 2)
            && v.count == (width / 2) * (height / 2)
    }
}

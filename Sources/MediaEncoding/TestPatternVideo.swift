#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Geometry shared by the generator and the reader: both derive it from the frame size
/// alone, so a decoded picture can be read without side information.
///
/// The top band holds two rows of 16 square blocks each: white, black guard blocks, 12 data
/// bits (white = 1, most significant first; row 0 carries bits 23…12, row 1 bits 11…0),
/// then black, white guard blocks. Below the bars, still inside the band, a text line shows
/// the label and the frame index. Everything below the band is moving content or, on flash
/// frames, uniform white.
struct TestPatternLayout: Sendable {
    static let blocksPerRow = 16
    static let bitsPerRow = 12
    static let black: UInt8 = 16
    static let white: UInt8 = 235

    let width: Int
    let height: Int
    /// Side of one bar-code block in pixels (even, 2…32).
    let block: Int
    /// Size of one font pixel.
    let textScale: Int
    /// Rows [0, bandHeight) are the bar-code/text band (even).
    let bandHeight: Int

    init(width: Int, height: Int) {
        self.width = width
        self.height = height
        let b = max(2, min(32, width / Self.blocksPerRow) & ~1)
        block = b
        textScale = max(1, b / 8)
        let band = 2 * b + (BitmapFont.glyphHeight + 2) * textScale
        bandHeight = min(height, (band + 1) & ~1)
    }

    var textTop: Int { 2 * block + textScale }
}

/// A deterministic synthetic camera: moving diagonal stripes and a bouncing box, a bar code
/// and a human-readable copy of the frame index, and a white flash once per second.
///
/// Frame `i` depends only on `i` (and the init parameters). Bar code and flash survive
/// lossy encoding; see ``TestPatternReader``. The bar code carries `index mod 2^24`.
/// Widths of at least 128 pixels give bar-code blocks of 8 px or more, enough for CRF ≤ 30.
public struct TestPatternVideo: Sendable {
    public let width: Int
    public let height: Int
    public let fps: Int
    public let label: String

    private let layout: TestPatternLayout
    /// One period (256) of a triangle wave, repeated to cover width + 256 so that any
    /// shifted row is one contiguous copy.
    private let lumaRamp: [UInt8]
    private let chromaRamp: [UInt8]

    /// - Parameters:
    ///   - width, height: even, positive.
    ///   - fps: frames per second; frames whose index is a multiple of `fps` are flashes.
    ///   - label: drawn before the index (letters, digits and `-_:.#/ `).
    public init(width: Int, height: Int, fps: Int, label: String = "") {
        precondition(width > 0 && height > 0 && width % 2 == 0 && height % 2 == 0, "even dimensions required")
        precondition(fps > 0, "fps must be positive")
        self.width = width
        self.height = height
        self.fps = fps
        self.label = label
        self.layout = TestPatternLayout(width: width, height: height)
        lumaRamp = (0..<(width + 256)).map { i in
            let t = i & 255
            return UInt8(40 + (t < 128 ? t : 255 - t))  // 40…167
        }
        chromaRamp = (0..<(width / 2 + 256)).map { i in
            let t = i & 255
            return UInt8(96 + (t < 128 ? t : 255 - t) / 2)  // 96…159
        }
    }

    /// True for frames that are drawn as a white flash (index a multiple of `fps`).
    public func isFlash(index: Int) -> Bool { index % fps == 0 }

    /// Renders frame `index` (≥ 0).
    public func frame(index: Int) -> I420Frame {
        precondition(index >= 0, "frame index must be >= 0")
        let w = width, h = height, cw = w / 2, ch = h / 2
        let band = layout.bandHeight
        let flash = isFlash(index: index)
        var y = [UInt8](repeating: TestPatternLayout.black, count: w * h)
        var u = [UInt8](repeating: 128, count: cw * ch)
        var v = [UInt8](repeating: 128, count: cw * ch)

        // Bouncing box: a square of 1/4 of the height, 6 px per frame horizontally.
        let boxSize = max(2, min(w, h / 4) & ~1)
        let travel = max(1, w - boxSize)
        let phase = (index * 6) % (2 * travel)
        let boxX = (phase < travel ? phase : 2 * travel - phase) & ~1
        let boxY = (band + max(0, h - band - boxSize) / 2 + 1) & ~1
        let drawBox = boxY + boxSize <= h

        y.withUnsafeMutableBufferPointer { yb in
            let yp = yb.baseAddress!
            if flash {
                memset(yp + band * w, Int32(TestPatternLayout.white), (h - band) * w)
            } else {
                lumaRamp.withUnsafeBufferPointer { ramp in
                    for row in band..<h {
                        let shift = (row + 4 * index) & 255
                        memcpy(yp + row * w, ramp.baseAddress! + shift, w)
                    }
                }
                if drawBox {
                    for row in boxY..<(boxY + boxSize) {
                        memset(yp + row * w + boxX, 210, boxSize)
                    }
                }
            }
            drawBand(index: index, into: yp)
        }
        if !flash {
            u.withUnsafeMutableBufferPointer { ub in
                let up = ub.baseAddress!
                chromaRamp.withUnsafeBufferPointer { ramp in
                    for row in (band / 2)..<ch {
                        let shift = (2 * index - row) & 255
                        memcpy(up + row * cw, ramp.baseAddress! + shift, cw)
                    }
                }
                if drawBox {
                    for row in (boxY / 2)..<((boxY + boxSize) / 2) {
                        memset(up + row * cw + boxX / 2, 90, boxSize / 2)
                    }
                }
            }
            if drawBox {
                v.withUnsafeMutableBufferPointer { vb in
                    let vp = vb.baseAddress!
                    for row in (boxY / 2)..<((boxY + boxSize) / 2) {
                        memset(vp + row * cw + boxX / 2, 200, boxSize / 2)
                    }
                }
            }
        }
        return I420Frame(width: w, height: h, y: y, u: u, v: v)
    }

    private func drawBand(index: Int, into yp: UnsafeMutablePointer<UInt8>) {
        let w = width, b = layout.block
        let code = UInt32(truncatingIfNeeded: index) & 0xFF_FFFF
        for r in 0..<2 {
            let rowBits = (code >> UInt32(12 * (1 - r))) & 0xFFF
            for col in 0..<TestPatternLayout.blocksPerRow {
                let isWhite: Bool
                switch col {
                case 0, 15: isWhite = true
                case 1, 14: isWhite = false
                default: isWhite = (rowBits >> UInt32(TestPatternLayout.bitsPerRow - 1 - (col - 2))) & 1 == 1
                }
                guard isWhite, (col + 1) * b <= w else { continue }
                for line in (r * b)..<((r + 1) * b) where line < height {
                    memset(yp + line * w + col * b, Int32(TestPatternLayout.white), b)
                }
            }
        }
        let text = label.isEmpty ? "#\(index)" : "\(label) #\(index)"
        BitmapFont.draw(
            text, x: layout.textScale, y: layout.textTop, scale: layout.textScale,
            value: TestPatternLayout.white, into: yp, stride: w, clipWidth: w, clipHeight: layout.bandHeight)
    }
}

/// Reads back what ``TestPatternVideo`` burned into a (possibly lossy-decoded) luma plane.
public enum TestPatternReader {
    /// The frame index from the bar code (modulo 2^24), or nil when guard blocks do not match
    /// or any block is too close to mid-grey to decide. Works for limited- or full-range luma.
    public static func frameNumber(y: [UInt8], width: Int, height: Int) -> Int? {
        let layout = TestPatternLayout(width: width, height: height)
        let b = layout.block
        guard width > 0, height >= 2 * b, y.count >= width * height,
              TestPatternLayout.blocksPerRow * b <= width else { return nil }
        // Average only the centre half of each block: edges ring after DCT quantisation.
        let inset = b / 4
        let span = max(1, b - 2 * inset)
        var value = 0
        return y.withUnsafeBufferPointer { yb -> Int? in
            for r in 0..<2 {
                for col in 0..<TestPatternLayout.blocksPerRow {
                    var sum = 0
                    for line in (r * b + inset)..<(r * b + inset + span) {
                        let start = line * width + col * b + inset
                        for x in start..<(start + span) { sum += Int(yb[x]) }
                    }
                    let mean = sum / (span * span)
                    // Mid-grey between black 16 and white 235 (or 0/255 full range) is ~126–128.
                    if abs(mean - 127) < 40 { return nil }
                    let isWhite = mean > 127
                    switch col {
                    case 0, 15: if !isWhite { return nil }
                    case 1, 14: if isWhite { return nil }
                    default: value = (value << 1) | (isWhite ? 1 : 0)
                    }
                }
            }
            return value
        }
    }

    /// True when the picture below the bar-code band is almost uniformly white (a flash frame).
    public static func isFlash(y: [UInt8], width: Int, height: Int) -> Bool {
        let layout = TestPatternLayout(width: width, height: height)
        guard y.count >= width * height, layout.bandHeight < height else { return false }
        var sum = 0
        var n = 0
        var dark = 0
        y.withUnsafeBufferPointer { yb in
            var row = layout.bandHeight
            while row < height {
                var x = 0
                while x < width {
                    let s = Int(yb[row * width + x])
                    sum += s
                    if s < 180 { dark += 1 }
                    n += 1
                    x += 3
                }
                row += 3
            }
        }
        guard n > 0 else { return false }
        // Non-flash content averages ~105 with only a small box above 180.
        return sum / n > 200 && dark * 50 < n
    }
}

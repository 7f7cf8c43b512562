import Foundation
@testable import CaptureAgentCore

/// The only fake camera allowed (this machine has none): a ``V4L2Device`` that grants
/// what the test scripts, serves buffers from its own memory, and records every call.
final class ScriptedV4L2Device: V4L2Device {
    enum Step {
        /// A filled buffer becomes ready: the next queued buffer (FIFO, as drivers do) is
        /// filled with `luma` and returned with these fields.
        case frame(sequence: UInt32, flags: UInt32, seconds: Int64, microseconds: Int64, luma: UInt8)
        /// Like `frame`, but the driver returns this specific index.
        case frameAt(index: UInt32, sequence: UInt32, flags: UInt32, seconds: Int64, microseconds: Int64, luma: UInt8)
        /// poll times out.
        case timeout
        /// The next call (poll or DQBUF) fails with errno.
        case fail(Int32)
    }

    var capabilities = V4L2Capabilities(driver: "scripted", card: "Scripted Cam", busInfo: "test:0",
                                        capabilities: 0x8400_0001, deviceCaps: 0x0400_0001)
    /// What S_FMT grants; nil = exactly what was asked, stride = width.
    var grantedFormat: V4L2PixelFormat?
    /// What S_PARM grants (frames per second); nil = no V4L2_CAP_TIMEPERFRAME.
    var grantedRate: (UInt32, UInt32)? = (30, 1)
    var grantedBuffers: UInt32 = 4
    var script: [Step] = []
    private(set) var calls: [String] = []
    private(set) var queued: [UInt32] = []
    private var memory: [UnsafeMutableRawBufferPointer] = []
    private var format = V4L2PixelFormat(width: 0, height: 0, pixelFormat: 0)

    deinit { for m in memory { m.deallocate() } }

    func queryCapabilities() throws(V4L2Error) -> V4L2Capabilities {
        calls.append("QUERYCAP")
        return capabilities
    }

    func setFormat(_ requested: V4L2PixelFormat) throws(V4L2Error) -> V4L2PixelFormat {
        calls.append("S_FMT \(requested.width)x\(requested.height) \(V4L2PixelFormat.fourccString(requested.pixelFormat))")
        var f = grantedFormat ?? requested
        if f.bytesPerLine == 0 { f.bytesPerLine = f.width }
        f.sizeImage = f.bytesPerLine * f.height * 3 / 2
        format = f
        return f
    }

    func setFrameRate(numerator: UInt32, denominator: UInt32) throws(V4L2Error) -> (numerator: UInt32, denominator: UInt32)? {
        calls.append("S_PARM \(numerator)/\(denominator)")
        return grantedRate.map { (numerator: $0.0, denominator: $0.1) }
    }

    func requestBuffers(count: UInt32) throws(V4L2Error) -> UInt32 {
        calls.append("REQBUFS \(count)")
        return count == 0 ? 0 : grantedBuffers
    }

    func mapBuffer(index: UInt32) throws(V4L2Error) -> UnsafeMutableRawBufferPointer {
        calls.append("MMAP \(index)")
        let m = UnsafeMutableRawBufferPointer.allocate(byteCount: Int(format.sizeImage), alignment: 16)
        m.initializeMemory(as: UInt8.self, repeating: 0)
        memory.append(m)
        return m
    }

    func unmapBuffer(_ buffer: UnsafeMutableRawBufferPointer) {
        calls.append("MUNMAP \(memory.firstIndex { $0.baseAddress == buffer.baseAddress } ?? -1)")
    }

    func queueBuffer(index: UInt32) throws(V4L2Error) {
        calls.append("QBUF \(index)")
        queued.append(index)
    }

    func dequeueBuffer() throws(V4L2Error) -> V4L2DequeuedBuffer? {
        guard !script.isEmpty else { return nil }
        let step = script.removeFirst()
        switch step {
        case .fail(let e):
            calls.append("DQBUF error \(e)")
            throw V4L2Error(call: "VIDIOC_DQBUF", errno: e)
        case .timeout:
            return nil
        case .frame(let seq, let flags, let s, let us, let luma):
            let index = queued.removeFirst()
            return fill(index: index, sequence: seq, flags: flags, s: s, us: us, luma: luma)
        case .frameAt(let index, let seq, let flags, let s, let us, let luma):
            queued.removeAll { $0 == index }
            return fill(index: index, sequence: seq, flags: flags, s: s, us: us, luma: luma)
        }
    }

    private func fill(index: UInt32, sequence: UInt32, flags: UInt32, s: Int64, us: Int64, luma: UInt8) -> V4L2DequeuedBuffer {
        calls.append("DQBUF \(index)")
        let m = memory[Int(index)]
        let lumaBytes = Int(format.bytesPerLine * format.height)
        m.baseAddress!.initializeMemory(as: UInt8.self, repeating: luma, count: lumaBytes)
        (m.baseAddress! + lumaBytes).initializeMemory(as: UInt8.self, repeating: 128, count: m.count - lumaBytes)
        // Stride padding is marked so a copy that includes it shows up in the picture.
        if format.bytesPerLine > format.width {
            for row in 0..<Int(format.height) {
                (m.baseAddress! + row * Int(format.bytesPerLine) + Int(format.width))
                    .initializeMemory(as: UInt8.self, repeating: 0xEE, count: Int(format.bytesPerLine - format.width))
            }
        }
        return V4L2DequeuedBuffer(index: index, bytesUsed: format.sizeImage, flags: flags, timestampSeconds: s,
                                  timestampMicroseconds: us, sequence: sequence)
    }

    func waitForFrame(timeoutMilliseconds: Int32) throws(V4L2Error) -> Bool {
        guard let step = script.first else {
            // End of script: behave like an unplugged camera so a test can never hang.
            throw V4L2Error(call: "poll", errno: ENODEV)
        }
        switch step {
        case .timeout:
            script.removeFirst()
            return false
        default:
            return true
        }
    }

    /// How many more conversions fail (as libv4lconvert does on a corrupt MJPEG frame).
    var failingConversions = 0

    /// A stand-in for libv4lconvert: the picture's first byte becomes the whole luma plane,
    /// chroma is grey. Enough to show which buffer was converted and that its result is used.
    func convertToI420(_ source: UnsafeRawBufferPointer, from format: V4L2PixelFormat,
                       into destination: UnsafeMutableRawBufferPointer) throws(V4L2Error) -> Int {
        calls.append("CONVERT \(V4L2PixelFormat.fourccString(format.pixelFormat)) \(source.count)")
        if failingConversions > 0 {
            failingConversions -= 1
            throw V4L2Error(call: "v4lconvert_convert", errno: EIO, message: "corrupt frame")
        }
        let luma = Int(format.width * format.height)
        destination.baseAddress!.initializeMemory(as: UInt8.self, repeating: source.first ?? 0, count: luma)
        (destination.baseAddress! + luma).initializeMemory(as: UInt8.self, repeating: 128, count: destination.count - luma)
        return destination.count
    }

    func streamOn() throws(V4L2Error) { calls.append("STREAMON") }
    func streamOff() throws(V4L2Error) { calls.append("STREAMOFF") }
    func close() { calls.append("CLOSE") }
}

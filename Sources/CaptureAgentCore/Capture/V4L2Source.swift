import MediaEncoding

/// `v4l2:/dev/videoN[@WxH@FPS]`: a camera through a ``V4L2Device``.
///
/// Negotiation: the device must offer CAPTURE and STREAMING; I420 ('YU12') is requested
/// at the wished size (libv4lconvert converts from YUYV/MJPEG when the camera lacks it)
/// and whatever was granted is read back and reported — a camera may pick another size.
/// Then the frame rate (S_PARM), four mmap buffers, all queued, STREAMON.
///
/// Capture: poll, DQBUF, copy the picture out, QBUF the same buffer at once (the driver
/// keeps filling the other three meanwhile). Timestamps: the buffer's own when the
/// driver says it is CLOCK_MONOTONIC (`(flags & 0xE000) == 0x2000`), otherwise the
/// clock at DQBUF. A jump in the driver's frame sequence counts as lost frames.
final class V4L2CaptureSource: CaptureSource {
    /// The wished capture parameters.
    struct Request: Sendable, Equatable {
        var width: Int
        var height: Int
        var fps: Int
        /// The device's own pixel format to capture in, converted to I420 by libv4lconvert
        /// in this process (`format=YUYV`); nil asks libv4l2 for I420 directly, which it
        /// delivers natively or converts from a format it picks.
        var deviceFormat: UInt32?
        init(width: Int = 1280, height: Int = 720, fps: Int = 30, deviceFormat: UInt32? = nil) {
            self.width = width
            self.height = height
            self.fps = fps
            self.deviceFormat = deviceFormat
        }
    }

    /// What the device granted.
    struct Granted: Sendable, Equatable, CustomStringConvertible {
        var width: Int
        var height: Int
        var pixelFormat: UInt32
        var bytesPerLine: Int
        var fpsNumerator: Int
        var fpsDenominator: Int
        /// False when the driver cannot set a frame rate (the requested one is assumed).
        var frameRateSet: Bool
        var bufferCount: Int
        var driver: String
        var card: String
        /// True when frames arrive in `pixelFormat` and libv4lconvert turns them into I420 here.
        var convertedHere = false

        var description: String {
            let fps = fpsDenominator == 1 ? "\(fpsNumerator)" : "\(fpsNumerator)/\(fpsDenominator)"
            let format = V4L2PixelFormat.fourccString(pixelFormat) + (convertedHere ? " → YU12 (libv4lconvert)" : "")
            return "\(card) (\(driver)): \(width)x\(height) \(format) @ \(fps) fps"
                + (frameRateSet ? "" : " (driver cannot set the rate; assumed)")
                + ", \(bufferCount) mmap buffers, stride \(bytesPerLine)"
        }
    }

    static let bufferCount: UInt32 = 4
    /// poll timeout; consecutive timeouts up to `watchdogTimeouts` are tolerated.
    static let pollTimeoutMilliseconds: Int32 = 2000
    static let watchdogTimeouts = 5
    /// Frames in a row that libv4lconvert may fail to convert (a corrupt MJPEG frame is
    /// dropped and counted) before the camera is given up with the converter's reason.
    static let conversionFailureLimit = 30

    let name: String
    let isLive = true
    let path: String
    let request: Request
    private let clock: any MonotonicClock
    private let openDevice: (String) throws(V4L2Error) -> any V4L2Device
    private var device: (any V4L2Device)?
    private var buffers: [UnsafeMutableRawBufferPointer] = []
    private var streaming = false
    private var lastSequence: UInt32?
    private var lost = 0
    private var lastPTS: Int64?
    /// Lines of the device's picture (odd heights are cropped in `granted`).
    private var deviceHeight = 0
    /// With `Request.deviceFormat`: the device's format and the I420 frame it converts into.
    private var conversion: (source: V4L2PixelFormat, output: UnsafeMutableRawBufferPointer)?
    private var conversionFailures = 0
    /// What the device granted; set by ``start()``.
    private(set) var granted: Granted?

    init(path: String, request: Request, clock: any MonotonicClock,
                openDevice: @escaping (String) throws(V4L2Error) -> any V4L2Device = { path throws(V4L2Error) in try LibV4L2Device(path: path) }) {
        self.name = "v4l2:\(path)"
        self.path = path
        self.request = request
        self.clock = clock
        self.openDevice = openDevice
    }

    deinit { stop() }

    var format: SourceFormat {
        guard let g = granted else {
            return .video(width: request.width, height: request.height, fpsNumerator: request.fps, fpsDenominator: 1)
        }
        return .video(width: g.width, height: g.height, fpsNumerator: g.fpsNumerator, fpsDenominator: g.fpsDenominator)
    }

    func start() throws(CaptureError) {
        let dev: any V4L2Device
        do {
            dev = try openDevice(path)
        } catch {
            throw CaptureError(.openFailed, "\(path): cannot open: \(error)")
        }
        device = dev
        do {
            try negotiate(dev)
        } catch {
            stop()
            throw error
        }
    }

    private func negotiate(_ dev: any V4L2Device) throws(CaptureError) {
        let caps = try wrap { () throws(V4L2Error) in try dev.queryCapabilities() }
        guard caps.canCaptureAndStream else {
            throw CaptureError(.unsupported, "\(path) (\(caps.card)) is not a streaming video capture device (capabilities 0x\(String(caps.effective, radix: 16)))")
        }
        let wantedFormat = request.deviceFormat ?? V4L2PixelFormat.yuv420
        let wished = V4L2PixelFormat(width: UInt32(request.width), height: UInt32(request.height), pixelFormat: wantedFormat)
        var got = try wrap { () throws(V4L2Error) in try dev.setFormat(wished) }
        guard got.pixelFormat == wantedFormat else {
            let asked = V4L2PixelFormat.fourccString(wantedFormat), granted = V4L2PixelFormat.fourccString(got.pixelFormat)
            if request.deviceFormat == nil {
                throw CaptureError(.negotiationFailed, "\(path): asked for YU12 (I420), the device granted \(granted) — libv4lconvert cannot convert from it")
            }
            throw CaptureError(.negotiationFailed, "\(path): asked for the device format \(asked), the device granted \(granted); `capture-agent devices` lists the formats it offers")
        }
        if wantedFormat != V4L2PixelFormat.yuv420 {
            // The picture is converted to a tightly packed I420 frame of the device's size.
            let size = Int(got.width) * Int(got.height) * 3 / 2
            conversion = (got, UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 16))
            got.bytesPerLine = got.width
        }
        // The encoder needs even dimensions; an odd granted size loses its last line/column.
        let width = Int(got.width) & ~1, height = Int(got.height) & ~1
        guard width >= 2, height >= 2 else {
            throw CaptureError(.negotiationFailed, "\(path): the device granted an unusable size \(got.width)x\(got.height)")
        }
        let stride = max(Int(got.bytesPerLine), Int(got.width))
        deviceHeight = Int(got.height)
        let rate = try wrap { () throws(V4L2Error) in try dev.setFrameRate(numerator: UInt32(request.fps), denominator: 1) }
        var fpsNum = request.fps, fpsDen = 1
        if let rate, rate.numerator > 0, rate.denominator > 0 {
            fpsNum = Int(rate.numerator)
            fpsDen = Int(rate.denominator)
        }
        let count = try wrap { () throws(V4L2Error) in try dev.requestBuffers(count: Self.bufferCount) }
        guard count >= 2 else {
            throw CaptureError(.negotiationFailed, "\(path): the driver allocated \(count) buffers; at least 2 are needed")
        }
        for index in 0..<count {
            let memory = try wrap { () throws(V4L2Error) in try dev.mapBuffer(index: index) }
            buffers.append(memory)
            try wrap { () throws(V4L2Error) in try dev.queueBuffer(index: index) }
        }
        try wrap { () throws(V4L2Error) in try dev.streamOn() }
        streaming = true
        granted = Granted(
            width: width, height: height, pixelFormat: got.pixelFormat, bytesPerLine: stride,
            fpsNumerator: fpsNum, fpsDenominator: fpsDen, frameRateSet: rate != nil,
            bufferCount: Int(count), driver: caps.driver, card: caps.card, convertedHere: conversion != nil)
    }

    func read() throws(CaptureError) -> CapturedMedia? {
        guard let dev = device, streaming, let g = granted else { return nil }
        var timeouts = 0
        while true {
            let ready = try wrap { () throws(V4L2Error) in try dev.waitForFrame(timeoutMilliseconds: Self.pollTimeoutMilliseconds) }
            if !ready {
                timeouts += 1
                if timeouts >= Self.watchdogTimeouts {
                    throw CaptureError(.timeout, "\(path): no frame for \(Int(Self.pollTimeoutMilliseconds) * timeouts / 1000) s")
                }
                continue
            }
            guard let buffer = try wrap({ () throws(V4L2Error) in try dev.dequeueBuffer() }) else { continue }
            // Stamp before copying: the copy takes time that is not the camera's.
            let dequeuedAt = clock.now()
            guard Int(buffer.index) < buffers.count else {
                throw CaptureError(.ioError(EINVAL), "\(path): driver returned unknown buffer index \(buffer.index)")
            }
            if let last = lastSequence, buffer.sequence > last &+ 1 {
                lost += Int(buffer.sequence &- last &- 1)
            }
            lastSequence = buffer.sequence
            let frame = try picture(in: buffers[Int(buffer.index)], buffer, granted: g, device: dev)
            // Give the buffer back before anything else can fail, so the driver never runs dry.
            try wrap { () throws(V4L2Error) in try dev.queueBuffer(index: buffer.index) }
            guard let frame else {
                lost += 1  // corrupted or short frame: counted as a capture drop
                continue
            }
            var pts = buffer.hasMonotonicTimestamp ? clock.time(atSystemTime: buffer.timestampNanoseconds) : dequeuedAt
            // The encoder requires strictly increasing times; a driver repeating a
            // timestamp must not stop the recording.
            if let lastPTS, pts <= lastPTS { pts = lastPTS + 1 }
            lastPTS = pts
            return .video(frame, pts: pts)
        }
    }

    /// The frame in a dequeued buffer as I420, or nil when the driver flagged it, it is too
    /// short, or libv4lconvert could not convert it (each counted as a capture drop).
    private func picture(in memory: UnsafeMutableRawBufferPointer, _ buffer: V4L2DequeuedBuffer,
                         granted g: Granted, device dev: any V4L2Device) throws(CaptureError) -> I420Frame? {
        guard buffer.flags & V4L2DequeuedBuffer.errorFlag == 0 else { return nil }
        guard let conversion else {
            let needed = g.bytesPerLine * deviceHeight + 2 * (g.bytesPerLine / 2) * (deviceHeight / 2)
            return Int(buffer.bytesUsed) >= needed ? Self.copyI420(memory, granted: g, deviceHeight: deviceHeight) : nil
        }
        let used = UnsafeRawBufferPointer(rebasing: memory[..<min(Int(buffer.bytesUsed), memory.count)])
        do {
            _ = try dev.convertToI420(used, from: conversion.source, into: conversion.output)
            conversionFailures = 0
        } catch {
            conversionFailures += 1
            guard conversionFailures < Self.conversionFailureLimit else {
                throw CaptureError(.ioError(error.errno), "\(path): \(conversionFailures) frames in a row could not be converted: \(error)")
            }
            return nil
        }
        return Self.copyI420(conversion.output, granted: g, deviceHeight: deviceHeight)
    }

    func takeLostCount() -> Int {
        defer { lost = 0 }
        return lost
    }

    func stop() {
        guard let dev = device else { return }
        if streaming { try? dev.streamOff() }
        streaming = false
        for memory in buffers { dev.unmapBuffer(memory) }
        buffers = []
        _ = try? dev.requestBuffers(count: 0)
        dev.close()
        device = nil
        conversion?.output.deallocate()
        conversion = nil
        conversionFailures = 0
    }

    /// Copies the three planes out of a YU12 buffer whose luma lines are `bytesPerLine`
    /// long (chroma lines half that), cropping to the (even) granted size.
    static func copyI420(_ memory: UnsafeMutableRawBufferPointer, granted g: Granted, deviceHeight: Int) -> I420Frame {
        let w = g.width, h = g.height, stride = g.bytesPerLine
        let cw = w / 2, ch = h / 2, cstride = stride / 2
        let fullHeight = max(h, deviceHeight)
        var y = [UInt8](repeating: 0, count: w * h)
        var u = [UInt8](repeating: 0, count: cw * ch)
        var v = [UInt8](repeating: 0, count: cw * ch)
        let base = memory.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let uBase = base + stride * fullHeight
        let vBase = uBase + cstride * (fullHeight / 2)
        y.withUnsafeMutableBufferPointer { yb in
            for row in 0..<h { (yb.baseAddress! + row * w).update(from: base + row * stride, count: w) }
        }
        u.withUnsafeMutableBufferPointer { ub in
            for row in 0..<ch { (ub.baseAddress! + row * cw).update(from: uBase + row * cstride, count: cw) }
        }
        v.withUnsafeMutableBufferPointer { vb in
            for row in 0..<ch { (vb.baseAddress! + row * cw).update(from: vBase + row * cstride, count: cw) }
        }
        return I420Frame(width: w, height: h, y: y, u: u, v: v)
    }

    private func wrap<T>(_ body: () throws(V4L2Error) -> T) throws(CaptureError) -> T {
        do {
            return try body()
        } catch {
            if error.errno == ENODEV {
                throw CaptureError(.deviceLost, "\(path): device disappeared (\(error.call): ENODEV) — unplugged?")
            }
            throw CaptureError(.ioError(error.errno), "\(path): \(error)")
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif

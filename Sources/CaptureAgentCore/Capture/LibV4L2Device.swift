#if canImport(Glibc)
import Glibc
#endif
import CV4L2

/// The real ``V4L2Device``: libv4l2 calls (`v4l2_open`, `v4l2_ioctl`, `v4l2_mmap`) through
/// the CV4L2 shims, so libv4lconvert can offer I420 for YUYV and MJPEG cameras.
final class LibV4L2Device: V4L2Device {
    let path: String
    private var fd: Int32

    init(path: String) throws(V4L2Error) {
        self.path = path
        // Non-blocking: readiness comes from poll, so DQBUF never hangs when stopping.
        let fd = cv4l2_open(path, O_RDWR | O_NONBLOCK)
        guard fd >= 0 else { throw V4L2Error(call: "open \(path)", errno: errno) }
        self.fd = fd
    }

    deinit { close() }

    func close() {
        if let converter { cv4l2_converter_destroy(converter) }
        converter = nil
        if fd >= 0 { _ = cv4l2_close(fd) }
        fd = -1
    }

    /// libv4lconvert's state for this device, made on the first conversion.
    private var converter: UnsafeMutableRawPointer?

    func convertToI420(_ source: UnsafeRawBufferPointer, from format: V4L2PixelFormat,
                              into destination: UnsafeMutableRawBufferPointer) throws(V4L2Error) -> Int {
        if converter == nil { converter = cv4l2_converter_create(fd) }
        guard let converter else { throw V4L2Error(call: "v4lconvert_create", errno: ENOMEM) }
        let written = cv4l2_convert_to_yu12(
            converter, format.pixelFormat, format.width, format.height, format.bytesPerLine, format.sizeImage,
            source.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(source.count),
            destination.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(destination.count))
        guard written >= 0 else {
            let reason = cv4l2_converter_error(converter).map { String(cString: $0) } ?? "unknown"
            throw V4L2Error(call: "v4lconvert_convert \(V4L2PixelFormat.fourccString(format.pixelFormat))→YU12",
                            errno: errno == 0 ? EINVAL : errno, message: reason.split(separator: "\n").first.map(String.init) ?? reason)
        }
        return Int(written)
    }

    private func ioctl<T>(_ name: String, _ request: UInt, _ arg: inout T) throws(V4L2Error) {
        var result: Int32
        repeat {
            result = withUnsafeMutablePointer(to: &arg) { cv4l2_ioctl(fd, request, UnsafeMutableRawPointer($0)) }
        } while result < 0 && errno == EINTR
        if result < 0 { throw V4L2Error(call: name, errno: errno) }
    }

    func queryCapabilities() throws(V4L2Error) -> V4L2Capabilities {
        var cap = v4l2_capability()
        try ioctl("VIDIOC_QUERYCAP", cv4l2_vidioc_querycap(), &cap)
        return V4L2Capabilities(
            driver: Self.string(cap.driver), card: Self.string(cap.card), busInfo: Self.string(cap.bus_info),
            capabilities: cap.capabilities, deviceCaps: cap.device_caps)
    }

    func setFormat(_ requested: V4L2PixelFormat) throws(V4L2Error) -> V4L2PixelFormat {
        var format = v4l2_format()
        format.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        format.fmt.pix.width = requested.width
        format.fmt.pix.height = requested.height
        format.fmt.pix.pixelformat = requested.pixelFormat
        format.fmt.pix.field = V4L2_FIELD_NONE.rawValue
        try ioctl("VIDIOC_S_FMT", cv4l2_vidioc_s_fmt(), &format)
        let pix = format.fmt.pix
        return V4L2PixelFormat(width: pix.width, height: pix.height, pixelFormat: pix.pixelformat,
                               bytesPerLine: pix.bytesperline, sizeImage: pix.sizeimage)
    }

    func setFrameRate(numerator: UInt32, denominator: UInt32) throws(V4L2Error) -> (numerator: UInt32, denominator: UInt32)? {
        var parm = v4l2_streamparm()
        parm.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        try ioctl("VIDIOC_G_PARM", cv4l2_vidioc_g_parm(), &parm)
        guard parm.parm.capture.capability & UInt32(V4L2_CAP_TIMEPERFRAME) != 0 else { return nil }
        // timeperframe is seconds per frame: the inverse of the rate.
        parm.parm.capture.timeperframe.numerator = denominator
        parm.parm.capture.timeperframe.denominator = numerator
        try ioctl("VIDIOC_S_PARM", cv4l2_vidioc_s_parm(), &parm)
        let t = parm.parm.capture.timeperframe
        guard t.numerator > 0, t.denominator > 0 else { return nil }
        return (t.denominator, t.numerator)
    }

    func requestBuffers(count: UInt32) throws(V4L2Error) -> UInt32 {
        var req = v4l2_requestbuffers()
        req.count = count
        req.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        req.memory = V4L2_MEMORY_MMAP.rawValue
        try ioctl("VIDIOC_REQBUFS", cv4l2_vidioc_reqbufs(), &req)
        return req.count
    }

    func mapBuffer(index: UInt32) throws(V4L2Error) -> UnsafeMutableRawBufferPointer {
        var buf = v4l2_buffer()
        buf.index = index
        buf.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        buf.memory = V4L2_MEMORY_MMAP.rawValue
        try ioctl("VIDIOC_QUERYBUF", cv4l2_vidioc_querybuf(), &buf)
        let length = Int(buf.length)
        let pointer = cv4l2_mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, Int64(buf.m.offset))
        guard let pointer, pointer != UnsafeMutableRawPointer(bitPattern: -1) else {
            throw V4L2Error(call: "mmap buffer \(index)", errno: errno)
        }
        return UnsafeMutableRawBufferPointer(start: pointer, count: length)
    }

    func unmapBuffer(_ buffer: UnsafeMutableRawBufferPointer) {
        _ = cv4l2_munmap(buffer.baseAddress, buffer.count)
    }

    func queueBuffer(index: UInt32) throws(V4L2Error) {
        var buf = v4l2_buffer()
        buf.index = index
        buf.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        buf.memory = V4L2_MEMORY_MMAP.rawValue
        try ioctl("VIDIOC_QBUF", cv4l2_vidioc_qbuf(), &buf)
    }

    func dequeueBuffer() throws(V4L2Error) -> V4L2DequeuedBuffer? {
        var buf = v4l2_buffer()
        buf.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        buf.memory = V4L2_MEMORY_MMAP.rawValue
        do {
            try ioctl("VIDIOC_DQBUF", cv4l2_vidioc_dqbuf(), &buf)
        } catch where error.errno == EAGAIN {
            return nil
        }
        return V4L2DequeuedBuffer(
            index: buf.index, bytesUsed: buf.bytesused, flags: buf.flags,
            timestampSeconds: Int64(buf.timestamp.tv_sec), timestampMicroseconds: Int64(buf.timestamp.tv_usec),
            sequence: buf.sequence)
    }

    func waitForFrame(timeoutMilliseconds: Int32) throws(V4L2Error) -> Bool {
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while true {
            let r = poll(&pfd, 1, timeoutMilliseconds)
            if r < 0 {
                if errno == EINTR { continue }
                throw V4L2Error(call: "poll", errno: errno)
            }
            if r == 0 { return false }
            // POLLERR without data is how some drivers say the device is gone.
            if pfd.revents & Int16(POLLERR) != 0 && pfd.revents & Int16(POLLIN) == 0 {
                throw V4L2Error(call: "poll", errno: ENODEV, message: "device reported an error (unplugged?)")
            }
            return true
        }
    }

    func streamOn() throws(V4L2Error) {
        var type = Int32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
        try ioctl("VIDIOC_STREAMON", cv4l2_vidioc_streamon(), &type)
    }

    func streamOff() throws(V4L2Error) {
        var type = Int32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
        try ioctl("VIDIOC_STREAMOFF", cv4l2_vidioc_streamoff(), &type)
    }

    // MARK: Enumeration (for `capture-agent devices`)

    /// Every capture pixel format with its description and frame sizes.
    func enumerateFormats() -> [(fourcc: UInt32, description: String, sizes: [String])] {
        var result: [(UInt32, String, [String])] = []
        var index: UInt32 = 0
        while true {
            var desc = v4l2_fmtdesc()
            desc.index = index
            desc.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            guard (try? ioctl("VIDIOC_ENUM_FMT", cv4l2_vidioc_enum_fmt(), &desc)) != nil else { break }
            result.append((desc.pixelformat, Self.string(desc.description), frameSizes(desc.pixelformat)))
            index += 1
        }
        return result
    }

    private func frameSizes(_ fourcc: UInt32) -> [String] {
        var sizes: [String] = []
        var index: UInt32 = 0
        while index < 64 {
            var size = v4l2_frmsizeenum()
            size.index = index
            size.pixel_format = fourcc
            guard (try? ioctl("VIDIOC_ENUM_FRAMESIZES", cv4l2_vidioc_enum_framesizes(), &size)) != nil else { break }
            if size.type == V4L2_FRMSIZE_TYPE_DISCRETE.rawValue {
                sizes.append("\(size.discrete.width)x\(size.discrete.height)")
            } else {
                let s = size.stepwise
                sizes.append("\(s.min_width)x\(s.min_height)…\(s.max_width)x\(s.max_height) step \(s.step_width)/\(s.step_height)")
                break
            }
            index += 1
        }
        return sizes
    }

    static func string<T>(_ tuple: T) -> String {
        withUnsafeBytes(of: tuple) { raw in
            let bytes = raw.prefix { $0 != 0 }
            return String(decoding: bytes, as: UTF8.self)
        }
    }
}

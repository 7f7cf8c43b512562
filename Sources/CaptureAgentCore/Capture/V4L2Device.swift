/// The V4L2 calls the capture logic needs, one method per ioctl (or mmap), so that the
/// logic in ``V4L2CaptureSource`` — negotiation, buffer queueing, timestamp mapping,
/// error handling — can be tested against a scripted device (this machine has no
/// camera). ``LibV4L2Device`` is the real implementation through libv4l2.
///
/// Methods throw ``V4L2Error`` carrying the ioctl name and `errno`.
protocol V4L2Device: AnyObject {
    /// VIDIOC_QUERYCAP.
    func queryCapabilities() throws(V4L2Error) -> V4L2Capabilities
    /// VIDIOC_S_FMT for single-planar capture; returns what the driver (or libv4lconvert) granted.
    func setFormat(_ requested: V4L2PixelFormat) throws(V4L2Error) -> V4L2PixelFormat
    /// VIDIOC_S_PARM with `timeperframe = denominator/numerator` seconds (the inverse of a
    /// frame rate). Returns the granted frame rate, or nil when the driver cannot set it
    /// (no V4L2_CAP_TIMEPERFRAME).
    func setFrameRate(numerator: UInt32, denominator: UInt32) throws(V4L2Error) -> (numerator: UInt32, denominator: UInt32)?
    /// VIDIOC_REQBUFS (MMAP); returns how many buffers the driver allocated. 0 frees them.
    func requestBuffers(count: UInt32) throws(V4L2Error) -> UInt32
    /// VIDIOC_QUERYBUF + mmap: maps buffer `index` and returns its memory.
    func mapBuffer(index: UInt32) throws(V4L2Error) -> UnsafeMutableRawBufferPointer
    /// munmap of a buffer returned by ``mapBuffer(index:)``.
    func unmapBuffer(_ buffer: UnsafeMutableRawBufferPointer)
    /// VIDIOC_QBUF.
    func queueBuffer(index: UInt32) throws(V4L2Error)
    /// VIDIOC_DQBUF; nil when no buffer is ready (EAGAIN).
    func dequeueBuffer() throws(V4L2Error) -> V4L2DequeuedBuffer?
    /// poll(POLLIN); false on timeout.
    func waitForFrame(timeoutMilliseconds: Int32) throws(V4L2Error) -> Bool
    /// VIDIOC_STREAMON / VIDIOC_STREAMOFF.
    func streamOn() throws(V4L2Error)
    func streamOff() throws(V4L2Error)
    /// Converts one frame in the device's native `format` to I420 of the same size
    /// (libv4lconvert on the real device); returns the bytes written to `destination`.
    func convertToI420(_ source: UnsafeRawBufferPointer, from format: V4L2PixelFormat,
                       into destination: UnsafeMutableRawBufferPointer) throws(V4L2Error) -> Int
    /// Closes the file descriptor.
    func close()
}

/// An ioctl (or other call) that failed, with its errno.
struct V4L2Error: Error, Sendable, Equatable, CustomStringConvertible {
    var call: String
    var errno: Int32
    var message: String

    init(call: String, errno: Int32, message: String = "") {
        self.call = call
        self.errno = errno
        self.message = message
    }

    var description: String {
        let detail = message.isEmpty ? describeErrno(errno) : message
        return "\(call) failed: \(detail) (errno \(errno))"
    }
}

/// The result of VIDIOC_QUERYCAP.
struct V4L2Capabilities: Sendable, Equatable {
    static let videoCapture: UInt32 = 0x0000_0001
    static let streaming: UInt32 = 0x0400_0000
    static let deviceCapsValid: UInt32 = 0x8000_0000

    var driver: String
    var card: String
    var busInfo: String
    var capabilities: UInt32
    var deviceCaps: UInt32

    init(driver: String, card: String, busInfo: String, capabilities: UInt32, deviceCaps: UInt32) {
        self.driver = driver
        self.card = card
        self.busInfo = busInfo
        self.capabilities = capabilities
        self.deviceCaps = deviceCaps
    }

    /// The capabilities of this device node (`device_caps` when the driver fills it,
    /// otherwise those of the whole physical device).
    var effective: UInt32 {
        capabilities & Self.deviceCapsValid != 0 ? deviceCaps : capabilities
    }

    var canCaptureAndStream: Bool {
        effective & Self.videoCapture != 0 && effective & Self.streaming != 0
    }
}

/// A single-planar pixel format (`struct v4l2_pix_format`, the fields that matter here).
struct V4L2PixelFormat: Sendable, Equatable {
    /// fourcc 'YU12' (V4L2_PIX_FMT_YUV420): I420, what the encoder takes.
    static let yuv420: UInt32 = fourcc("YU12")
    static let yuyv: UInt32 = fourcc("YUYV")
    static let mjpeg: UInt32 = fourcc("MJPG")

    var width: UInt32
    var height: UInt32
    var pixelFormat: UInt32
    /// Bytes per luma line (≥ width; chroma lines are half of it for YU12).
    var bytesPerLine: UInt32
    var sizeImage: UInt32

    init(width: UInt32, height: UInt32, pixelFormat: UInt32, bytesPerLine: UInt32 = 0, sizeImage: UInt32 = 0) {
        self.width = width
        self.height = height
        self.pixelFormat = pixelFormat
        self.bytesPerLine = bytesPerLine
        self.sizeImage = sizeImage
    }

    static func fourcc(_ s: String) -> UInt32 {
        let b = Array(s.utf8)
        return UInt32(b[0]) | UInt32(b[1]) << 8 | UInt32(b[2]) << 16 | UInt32(b[3]) << 24
    }

    /// V4L2_PIX_FMT_FLAG_BE: bit 31 marks the big-endian variant of a format (`v4l2_fourcc_be`).
    static let bigEndianFlag: UInt32 = 1 << 31

    /// The fourcc as v4l2-ctl prints it: `Y16 -BE` for a big-endian format, and `.` for a byte
    /// that is not printable ASCII (never raw bytes, which are not valid UTF-8).
    static func fourccString(_ v: UInt32) -> String {
        let code = v & ~bigEndianFlag
        let characters = (0..<4).map { index -> Character in
            let byte = UInt8((code >> (8 * index)) & 0xFF)
            return (0x20...0x7E).contains(byte) ? Character(Unicode.Scalar(byte)) : "."
        }
        return String(characters) + (v & bigEndianFlag != 0 ? "-BE" : "")
    }
}

/// What VIDIOC_DQBUF returned.
struct V4L2DequeuedBuffer: Sendable, Equatable {
    /// V4L2_BUF_FLAG_TIMESTAMP_MASK and _MONOTONIC.
    static let timestampMask: UInt32 = 0xE000
    static let timestampMonotonic: UInt32 = 0x2000
    /// V4L2_BUF_FLAG_ERROR: the data may be corrupted.
    static let errorFlag: UInt32 = 0x40

    var index: UInt32
    var bytesUsed: UInt32
    var flags: UInt32
    var timestampSeconds: Int64
    var timestampMicroseconds: Int64
    /// Frame counter of the driver; a jump means frames were lost inside the driver.
    var sequence: UInt32

    init(index: UInt32, bytesUsed: UInt32, flags: UInt32, timestampSeconds: Int64, timestampMicroseconds: Int64, sequence: UInt32) {
        self.index = index
        self.bytesUsed = bytesUsed
        self.flags = flags
        self.timestampSeconds = timestampSeconds
        self.timestampMicroseconds = timestampMicroseconds
        self.sequence = sequence
    }

    /// The buffer carries a CLOCK_MONOTONIC timestamp.
    var hasMonotonicTimestamp: Bool { flags & Self.timestampMask == Self.timestampMonotonic }

    var timestampNanoseconds: Int64 { timestampSeconds * 1_000_000_000 + timestampMicroseconds * 1_000 }
}

#if canImport(Glibc)
import Glibc
#endif

func describeErrno(_ code: Int32) -> String {
    String(cString: strerror(code))
}

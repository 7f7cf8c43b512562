#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import MediaEncoding

/// A read-only file owned by the source; closed in `deinit` at the latest.
final class InputFile {
    private var handle: UnsafeMutablePointer<FILE>?
    let path: String

    init(path: String) throws(CaptureError) {
        self.path = path
        guard let f = fopen(path, "rb") else {
            throw CaptureError(.openFailed, "\(path): cannot open (\(String(cString: strerror(errno))))")
        }
        handle = f
    }

    deinit { close() }

    func close() {
        if let handle { fclose(handle) }
        handle = nil
    }

    /// Reads exactly `count` bytes; nil at a clean end of file (nothing read),
    /// `invalidInput` when the file ends inside the block.
    func readExactly(_ count: Int, what: String) throws(CaptureError) -> [UInt8]? {
        guard let handle else { return nil }
        var bytes = [UInt8](repeating: 0, count: count)
        let n = bytes.withUnsafeMutableBytes { fread($0.baseAddress, 1, count, handle) }
        if n == count { return bytes }
        if n == 0, feof(handle) != 0 { return nil }
        if ferror(handle) != 0 { throw CaptureError(.ioError(errno), "\(path): read error in \(what)") }
        throw CaptureError(.invalidInput, "\(path): file ends inside \(what) (\(n) of \(count) bytes)")
    }

    /// Reads up to `count` bytes (fewer only at the end of the file); nil when nothing is left.
    func readUpTo(_ count: Int) throws(CaptureError) -> [UInt8]? {
        guard let handle else { return nil }
        var bytes = [UInt8](repeating: 0, count: count)
        let n = bytes.withUnsafeMutableBytes { fread($0.baseAddress, 1, count, handle) }
        if n < count, ferror(handle) != 0 { throw CaptureError(.ioError(errno), "\(path): read error") }
        if n == 0 { return nil }
        bytes.removeSubrange(n...)
        return bytes
    }

    /// Reads up to and excluding the next `\n` (at most `limit` bytes); nil at end of file.
    func readLine(limit: Int, what: String) throws(CaptureError) -> [UInt8]? {
        guard let handle else { return nil }
        var line: [UInt8] = []
        while true {
            let c = fgetc(handle)
            if c == EOF {
                if line.isEmpty { return nil }
                throw CaptureError(.invalidInput, "\(path): file ends inside \(what)")
            }
            if c == 0x0A { return line }
            line.append(UInt8(c))
            guard line.count <= limit else {
                throw CaptureError(.invalidInput, "\(path): \(what) longer than \(limit) bytes (not a YUV4MPEG2 file?)")
            }
        }
    }
}

// MARK: - YUV4MPEG2

/// The stream header of a YUV4MPEG2 file: `YUV4MPEG2 W<width> H<height> F<num>:<den> …`.
/// Only 4:2:0 chroma (`C420`, `C420jpeg`, `C420mpeg2`, `C420paldv`, or no `C` tag, whose
/// default is 4:2:0) is accepted: that is I420 as the encoder takes it.
struct Y4MHeader: Sendable, Equatable {
    var width: Int
    var height: Int
    var fpsNumerator: Int
    var fpsDenominator: Int
    var colorspace: String

    init(width: Int, height: Int, fpsNumerator: Int, fpsDenominator: Int, colorspace: String = "420jpeg") {
        self.width = width
        self.height = height
        self.fpsNumerator = fpsNumerator
        self.fpsDenominator = fpsDenominator
        self.colorspace = colorspace
    }

    /// Bytes of one picture.
    var frameSize: Int { width * height + 2 * ((width / 2) * (height / 2)) }

    /// Parses the header line (without its newline).
    static func parse(_ line: [UInt8], path: String = "y4m") throws(CaptureError) -> Y4MHeader {
        let text = String(decoding: line, as: UTF8.self)
        let fields = text.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.first == "YUV4MPEG2" else {
            throw CaptureError(.invalidInput, "\(path): not a YUV4MPEG2 file (no \"YUV4MPEG2\" signature)")
        }
        var width: Int?, height: Int?, num: Int?, den: Int?
        var colorspace = "420jpeg"
        for field in fields.dropFirst() {
            let tag = field.first!
            let value = field.dropFirst()
            switch tag {
            case "W": width = Int(value)
            case "H": height = Int(value)
            case "F":
                let parts = value.split(separator: ":")
                guard parts.count == 2, let n = Int(parts[0]), let d = Int(parts[1]), n > 0, d > 0 else {
                    throw CaptureError(.invalidInput, "\(path): bad frame rate \"\(field)\" (expected F<num>:<den>)")
                }
                num = n
                den = d
            case "C": colorspace = String(value)
            default: break  // I (interlacing), A (aspect), X (extensions) do not change the bytes.
            }
        }
        guard let width, let height, width > 0, height > 0 else {
            throw CaptureError(.invalidInput, "\(path): YUV4MPEG2 header lacks a positive W and H")
        }
        guard width % 2 == 0, height % 2 == 0 else {
            throw CaptureError(.invalidInput, "\(path): \(width)x\(height) is odd; 4:2:0 encoding needs even dimensions")
        }
        guard let num, let den else {
            throw CaptureError(.invalidInput, "\(path): YUV4MPEG2 header lacks a frame rate (F<num>:<den>)")
        }
        guard colorspace.hasPrefix("420"), ["420", "420jpeg", "420mpeg2", "420paldv"].contains(colorspace) else {
            throw CaptureError(.invalidInput, "\(path): colour space C\(colorspace) is not supported; only C420* (8-bit 4:2:0) is")
        }
        return Y4MHeader(width: width, height: height, fpsNumerator: num, fpsDenominator: den, colorspace: colorspace)
    }
}

/// `y4m:PATH`: pictures of a YUV4MPEG2 file. Frame `n` is stamped `t0 + n·den/num`
/// (t0 = the agent's shared epoch, or the clock at start); paced mode waits for that time,
/// fast mode does not. With the shared epoch, file sources that start one after another
/// (an encoder opened in between) still begin at the same instant, so the recorded A/V
/// offset is the files' own, not the start-up gap (issue 13, finding 8).
final class Y4MFileSource: CaptureSource {
    let name: String
    let isLive: Bool
    private let path: String
    private let clock: any MonotonicClock
    private let paced: Bool
    private var file: InputFile?
    private var header = Y4MHeader(width: 2, height: 2, fpsNumerator: 1, fpsDenominator: 1)
    private let epoch: Int64?
    private var t0: Int64 = 0
    private var index: Int64 = 0

    /// - Parameter epoch: time of frame 0; nil = the clock's time at ``start()``.
    init(path: String, clock: any MonotonicClock, paced: Bool = true, epoch: Int64? = nil) {
        self.name = "y4m:\(path)"
        self.path = path
        self.clock = clock
        self.paced = paced
        self.isLive = paced
        self.epoch = epoch
    }

    var format: SourceFormat {
        .video(width: header.width, height: header.height, fpsNumerator: header.fpsNumerator, fpsDenominator: header.fpsDenominator)
    }

    func start() throws(CaptureError) {
        let file = try InputFile(path: path)
        guard let line = try file.readLine(limit: 1024, what: "the YUV4MPEG2 header") else {
            throw CaptureError(.invalidInput, "\(path): empty file")
        }
        header = try Y4MHeader.parse(line, path: path)
        self.file = file
        t0 = epoch ?? clock.now()
        index = 0
    }

    func read() throws(CaptureError) -> CapturedMedia? {
        guard let file else { return nil }
        guard let marker = try file.readLine(limit: 1024, what: "a FRAME header") else { return nil }
        guard marker.starts(with: Array("FRAME".utf8)) else {
            throw CaptureError(.invalidInput, "\(path): frame \(index): expected \"FRAME\", found \"\(String(decoding: marker.prefix(16), as: UTF8.self))\"")
        }
        guard let bytes = try file.readExactly(header.frameSize, what: "frame \(index)") else {
            throw CaptureError(.invalidInput, "\(path): file ends after the header of frame \(index)")
        }
        let pts = t0 + nanoseconds(count: index, numerator: Int64(header.fpsNumerator), denominator: Int64(header.fpsDenominator))
        if paced { clock.sleep(until: pts) }
        index += 1
        let ySize = header.width * header.height
        let cSize = (header.width / 2) * (header.height / 2)
        let frame = I420Frame(
            width: header.width, height: header.height,
            y: Array(bytes[0..<ySize]), u: Array(bytes[ySize..<(ySize + cSize)]), v: Array(bytes[(ySize + cSize)...]))
        return .video(frame, pts: pts)
    }

    func stop() {
        file?.close()
        file = nil
    }
}

// MARK: - WAV

/// The format of a RIFF/WAVE file, restricted to what the agent records: PCM
/// (format 1, or WAVE_FORMAT_EXTENSIBLE with the PCM sub-format), 16-bit, 48 kHz, 1 or 2
/// channels (Opus takes 48 kHz natively; resampling is not the agent's business).
struct WAVFormat: Sendable, Equatable {
    var channels: Int
    var sampleRate: Int
    var bitsPerSample: Int
    /// Bytes of sample data (the `data` chunk size; may be 0xFFFFFFFF for streamed files).
    var dataSize: UInt32

    /// Parses the bytes of a `fmt ` chunk and checks that the agent can use them.
    static func parseFormatChunk(_ c: [UInt8], path: String = "wav") throws(CaptureError) -> (channels: Int, rate: Int, bits: Int) {
        guard c.count >= 16 else { throw CaptureError(.invalidInput, "\(path): fmt chunk of \(c.count) bytes is too short") }
        func u16(_ i: Int) -> Int { Int(c[i]) | Int(c[i + 1]) << 8 }
        func u32(_ i: Int) -> Int { u16(i) | u16(i + 2) << 16 }
        var tag = u16(0)
        let channels = u16(2), rate = u32(4), bits = u16(14)
        if tag == 0xFFFE {
            // WAVE_FORMAT_EXTENSIBLE: the real format is the first two bytes of the sub-format GUID.
            guard c.count >= 26 else { throw CaptureError(.invalidInput, "\(path): WAVE_FORMAT_EXTENSIBLE chunk is too short") }
            tag = u16(24)
        }
        guard tag == 1 else {
            throw CaptureError(.invalidInput, "\(path): audio format \(tag) is not PCM (need PCM s16le 48000 Hz mono or stereo)")
        }
        guard bits == 16 else {
            throw CaptureError(.invalidInput, "\(path): \(bits)-bit samples; need PCM s16le 48000 Hz mono or stereo")
        }
        guard rate == 48000 else {
            throw CaptureError(.invalidInput, "\(path): sample rate \(rate) Hz; need 48000 Hz (resample with e.g. `ffmpeg -ar 48000`)")
        }
        guard channels == 1 || channels == 2 else {
            throw CaptureError(.invalidInput, "\(path): \(channels) channels; need mono or stereo")
        }
        return (channels, rate, bits)
    }
}

/// `wav:PATH`: PCM of a WAV file in 20 ms chunks. Chunk `k` is stamped `t0 + k·20 ms`;
/// paced mode waits until the chunk's end, as a device would deliver it.
final class WAVFileSource: CaptureSource {
    static let chunkFrames = 960
    let name: String
    let isLive: Bool
    private let path: String
    private let clock: any MonotonicClock
    private let paced: Bool
    private var file: InputFile?
    private var channels = 1
    private var remaining: UInt64 = 0
    private let epoch: Int64?
    private var t0: Int64 = 0
    private var framesRead: Int64 = 0

    /// - Parameter epoch: time of the first sample; nil = the clock's time at ``start()``.
    init(path: String, clock: any MonotonicClock, paced: Bool = true, epoch: Int64? = nil) {
        self.name = "wav:\(path)"
        self.path = path
        self.clock = clock
        self.paced = paced
        self.isLive = paced
        self.epoch = epoch
    }

    var format: SourceFormat { .audio(sampleRate: 48000, channels: channels) }

    func start() throws(CaptureError) {
        let file = try InputFile(path: path)
        guard let riff = try file.readExactly(12, what: "the RIFF header"),
              riff[0..<4].elementsEqual("RIFF".utf8), riff[8..<12].elementsEqual("WAVE".utf8) else {
            throw CaptureError(.invalidInput, "\(path): not a RIFF/WAVE file")
        }
        var sawFormat = false
        // Walk the chunks up to `data`; anything else (LIST, fact, …) is skipped.
        while true {
            guard let chunk = try file.readExactly(8, what: "a chunk header") else {
                throw CaptureError(.invalidInput, "\(path): no data chunk")
            }
            let id = String(decoding: chunk[0..<4], as: UTF8.self)
            let size = UInt32(chunk[4]) | UInt32(chunk[5]) << 8 | UInt32(chunk[6]) << 16 | UInt32(chunk[7]) << 24
            if id == "data" {
                guard sawFormat else { throw CaptureError(.invalidInput, "\(path): data chunk before the fmt chunk") }
                remaining = size == 0xFFFF_FFFF ? UInt64.max : UInt64(size)
                break
            }
            guard size <= 1 << 20 else { throw CaptureError(.invalidInput, "\(path): \(id) chunk of \(size) bytes before the data") }
            let padded = Int(size) + Int(size & 1)
            guard let body = try file.readExactly(padded, what: "the \(id) chunk") else {
                throw CaptureError(.invalidInput, "\(path): file ends in the \(id) chunk")
            }
            if id == "fmt " {
                channels = try WAVFormat.parseFormatChunk(Array(body.prefix(Int(size))), path: path).channels
                sawFormat = true
            }
        }
        self.file = file
        t0 = epoch ?? clock.now()
        framesRead = 0
    }

    func read() throws(CaptureError) -> CapturedMedia? {
        guard let file, remaining > 0 else { return nil }
        let frameBytes = 2 * channels
        let want = min(UInt64(Self.chunkFrames * frameBytes), remaining - remaining % UInt64(frameBytes))
        guard want > 0, let bytes = try file.readUpTo(Int(want)) else { return nil }
        remaining -= UInt64(bytes.count)
        let frames = bytes.count / frameBytes
        guard frames > 0 else { return nil }
        var pcm = [Int16](repeating: 0, count: frames * channels)
        for i in 0..<(frames * channels) {
            pcm[i] = Int16(bitPattern: UInt16(bytes[2 * i]) | UInt16(bytes[2 * i + 1]) << 8)
        }
        let pts = t0 + nanoseconds(count: framesRead, numerator: 48000, denominator: 1)
        framesRead += Int64(frames)
        if paced { clock.sleep(until: t0 + nanoseconds(count: framesRead, numerator: 48000, denominator: 1)) }
        return .audio(pcm, frames: frames, pts: pts)
    }

    func stop() {
        file?.close()
        file = nil
    }
}

/// A parsed `--source NAME=KIND:ARGUMENT[?key=value&…]` (see docs/agent.md "Sources").
///
/// ```
/// front=v4l2:/dev/video0?size=1280x720&fps=30
/// usb=v4l2:/dev/video2?size=640x480&format=YUYV   (capture YUYV, convert with libv4lconvert)
/// back=test:1280x720@30          (synthetic camera; plain `test` = 1280x720@30)
/// tone=test:audio                (synthetic microphone; test:audio?channels=2)
/// mic=alsa:default?channels=1
/// clip=y4m:/data/clip.y4m
/// voice=wav:/data/voice.wav
/// ```
public struct SourceSpec: Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// `deviceFormat`: the fourcc to capture in (`format=`), nil for I420 through libv4l2.
        case v4l2(path: String, width: Int, height: Int, fps: Int, deviceFormat: UInt32? = nil)
        case alsa(device: String, channels: Int)
        case testVideo(width: Int, height: Int, fps: Int)
        case testAudio(channels: Int)
        case y4m(path: String)
        case wav(path: String)

        public var isVideo: Bool {
            switch self {
            case .v4l2, .testVideo, .y4m: true
            case .alsa, .testAudio, .wav: false
            }
        }
    }

    public var name: String
    public var kind: Kind
    /// The text it was parsed from.
    public var text: String

    public var description: String { text }

    /// Why a specification was refused; the message says what would be accepted.
    public struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        var spec: String
        var reason: String
        public var description: String { "invalid source \"\(spec)\": \(reason)" }
    }

    public init(name: String, kind: Kind, text: String) {
        self.name = name
        self.kind = kind
        self.text = text
    }

    public static let usage = """
        NAME=v4l2:/dev/videoN[?size=WxH&fps=N&format=FOURCC] | NAME=alsa:DEVICE[?channels=1|2] | \
        NAME=test[:WxH@FPS] | NAME=test:audio[?channels=1|2] | NAME=y4m:PATH | NAME=wav:PATH
        """

    public static func parse(_ text: String) throws(ParseError) -> SourceSpec {
        func fail(_ reason: String) -> ParseError { ParseError(spec: text, reason: reason + "; expected \(usage)") }
        guard let eq = text.firstIndex(of: "=") else { throw fail("missing NAME=") }
        let name = String(text[..<eq])
        let rest = String(text[text.index(after: eq)...])
        guard !name.isEmpty, name.utf8.count <= 64,
              name.utf8.allSatisfy({ $0 < 128 && (isalnum(Int32($0)) != 0 || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".")) })
        else { throw fail("the name \"\(name)\" must be 1…64 of [A-Za-z0-9._-]") }

        let kindText: String
        let argument: String
        if let colon = rest.firstIndex(of: ":") {
            kindText = String(rest[..<colon])
            argument = String(rest[rest.index(after: colon)...])
        } else {
            kindText = rest
            argument = ""
        }
        // Options after the last '?' (paths and ALSA names rarely contain one).
        var main = argument
        var options: [String: String] = [:]
        if let q = argument.lastIndex(of: "?") {
            main = String(argument[..<q])
            for pair in argument[argument.index(after: q)...].split(separator: "&") {
                let kv = pair.split(separator: "=", maxSplits: 1)
                guard kv.count == 2 else { throw fail("option \"\(pair)\" is not key=value") }
                options[String(kv[0])] = String(kv[1])
            }
        }
        func take(_ key: String) -> String? { options.removeValue(forKey: key) }
        func channels() throws(ParseError) -> Int {
            guard let raw = take("channels") else { return 1 }
            guard let c = Int(raw), c == 1 || c == 2 else { throw fail("channels must be 1 or 2, got \(raw)") }
            return c
        }

        let kind: Kind
        switch kindText {
        case "v4l2":
            guard main.hasPrefix("/") else { throw fail("v4l2 needs a device path such as /dev/video0") }
            var (w, h, fps) = (1280, 720, 30)
            if let size = take("size") {
                guard let parsed = parseSize(size) else { throw fail("size must be WxH, got \(size)") }
                (w, h) = parsed
            }
            if let f = take("fps") {
                guard let v = Int(f), (1...1000).contains(v) else { throw fail("fps must be 1…1000, got \(f)") }
                fps = v
            }
            var deviceFormat: UInt32?
            if let f = take("format") {
                guard (1...4).contains(f.utf8.count), f.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
                    throw fail("format must be a V4L2 fourcc such as YUYV, MJPG, NV12 or YU12, got \(f)")
                }
                deviceFormat = V4L2PixelFormat.fourcc(padded(f))
            }
            kind = .v4l2(path: main, width: w, height: h, fps: fps, deviceFormat: deviceFormat)
        case "alsa":
            guard !main.isEmpty else { throw fail("alsa needs a device name such as default, null or hw:1,0") }
            kind = .alsa(device: main, channels: try channels())
        case "test":
            if main == "audio" || main == "tone" {
                kind = .testAudio(channels: try channels())
            } else if main.isEmpty {
                kind = .testVideo(width: 1280, height: 720, fps: 30)
            } else {
                let parts = main.split(separator: "@")
                guard parts.count == 2, let size = parseSize(String(parts[0])), let fps = Int(parts[1]), (1...240).contains(fps) else {
                    throw fail("test video must be test:WxH@FPS (e.g. test:1280x720@30)")
                }
                guard size.0 >= 32, size.1 >= 32, size.0 % 2 == 0, size.1 % 2 == 0, size.0 <= 7680, size.1 <= 4320 else {
                    throw fail("test video size must be even and between 32x32 and 7680x4320")
                }
                kind = .testVideo(width: size.0, height: size.1, fps: fps)
            }
        case "y4m":
            guard !main.isEmpty else { throw fail("y4m needs a file path") }
            kind = .y4m(path: main)
        case "wav":
            guard !main.isEmpty else { throw fail("wav needs a file path") }
            kind = .wav(path: main)
        default:
            throw fail("unknown source kind \"\(kindText)\"")
        }
        if let unknown = options.keys.sorted().first {
            throw fail("option \"\(unknown)\" does not apply to \(kindText)")
        }
        return SourceSpec(name: name, kind: kind, text: text)
    }

    /// `Y16` → `Y16 `: fourccs shorter than four characters are padded with spaces.
    static func padded(_ s: String) -> String { s + String(repeating: " ", count: max(0, 4 - s.utf8.count)) }

    static func parseSize(_ s: String) -> (Int, Int)? {
        let parts = s.lowercased().split(separator: "x")
        guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]), w > 0, h > 0 else { return nil }
        return (w, h)
    }
}

#if canImport(Glibc)
import Glibc
#endif

extension SourceSpec {
    /// Creates the (not yet started) source.
    /// - Parameters:
    ///   - epoch: shared time zero of synthetic and file sources, so flashes and beeps coincide
    ///     and files start together, whatever their start order.
    ///   - fastFiles: read y4m/wav as fast as possible instead of in real time.
    func makeSource(clock: any MonotonicClock, epoch: Int64, fastFiles: Bool) -> any CaptureSource {
        switch kind {
        case .v4l2(let path, let w, let h, let fps, let deviceFormat):
            return V4L2CaptureSource(path: path, request: .init(width: w, height: h, fps: fps, deviceFormat: deviceFormat), clock: clock)
        case .alsa(let device, let channels):
            return ALSACaptureSource(device: device, channels: channels, clock: clock)
        case .testVideo(let w, let h, let fps):
            return TestVideoSource(width: w, height: h, fps: fps, label: name, clock: clock, epoch: epoch)
        case .testAudio(let channels):
            return TestAudioSource(channels: channels, clock: clock, epoch: epoch)
        case .y4m(let path):
            return Y4MFileSource(path: path, clock: clock, paced: !fastFiles, epoch: epoch)
        case .wav(let path):
            return WAVFileSource(path: path, clock: clock, paced: !fastFiles, epoch: epoch)
        }
    }
}

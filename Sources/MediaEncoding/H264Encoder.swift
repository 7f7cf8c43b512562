internal import CX264

/// One encoded H.264 access unit (all NAL units x264 produced for one picture).
public struct EncodedVideoFrame: Sendable, Equatable {
    /// The access unit: Annex B (start codes) when the encoder was created with
    /// `annexB == true`, otherwise every NAL unit prefixed by its 4-byte big-endian length.
    public var data: [UInt8]
    /// Presentation time in nanoseconds (the `pts` passed to ``H264Encoder/encode(_:pts:forceKeyframe:)``).
    public var pts: Int64
    /// Decoding time in nanoseconds as x264 reports it. Monotonic and `<= pts`; with
    /// B-frames the first values are negative (earlier than the first pts).
    public var dts: Int64
    /// An IDR picture (a random access point).
    public var isKeyframe: Bool

    public init(data: [UInt8], pts: Int64, dts: Int64, isKeyframe: Bool) {
        self.data = data
        self.pts = pts
        self.dts = dts
        self.isKeyframe = isKeyframe
    }
}

/// An owning wrapper over a libx264 encoder taking ``I420Frame`` pictures.
///
/// Timestamps are nanoseconds both in and out. Not thread-safe: use one instance from
/// one task/thread at a time.
public final class H264Encoder {
    /// Encoder configuration.
    public struct Settings: Sendable, Equatable {
        /// Rate control mode.
        public enum RateControl: Sendable, Equatable {
            /// Constant rate factor (0–51, lower is better; 23 is x264's default).
            case crf(Double)
            /// Average bitrate in kbit/s, capped by a VBV of the same rate and one second of buffer.
            case bitrate(kbps: Int)
        }

        public var width: Int
        public var height: Int
        /// Nominal frame rate (frames per second), used for rate control and the defaults below.
        public var fps: Int
        /// x264 preset: "ultrafast" … "placebo".
        public var preset: String
        /// x264 tune (e.g. "zerolatency", "film"; several joined by ","). When `bFrames > 0`,
        /// "zerolatency" is dropped because it disables B-frames.
        public var tune: String?
        public var rateControl: RateControl
        /// Distance between IDR frames, in frames. Scene-cut detection is disabled so that
        /// keyframes fall exactly at 0, K, 2K, … (predictable segment boundaries).
        public var keyframeInterval: Int
        /// Maximum consecutive B-frames (0 disables them; decode order then equals display order).
        public var bFrames: Int
        /// Encoder threads; 0 lets x264 choose.
        public var threads: Int
        /// H.264 profile limit passed to `x264_param_apply_profile` ("baseline", "main", "high", ...).
        /// A profile never raises what the preset allows (ultrafast stays Constrained Baseline).
        public var profile: String?
        /// Annex B start codes in ``EncodedVideoFrame/data``; false gives 4-byte length prefixes (MP4 style).
        public var annexB: Bool
        /// Repeat SPS/PPS in-band before every keyframe.
        public var repeatHeaders: Bool

        public init(
            width: Int,
            height: Int,
            fps: Int,
            preset: String = "veryfast",
            tune: String? = "zerolatency",
            rateControl: RateControl = .crf(23),
            keyframeInterval: Int? = nil,
            bFrames: Int = 0,
            threads: Int = 0,
            profile: String? = nil,
            annexB: Bool = true,
            repeatHeaders: Bool = true
        ) {
            self.width = width
            self.height = height
            self.fps = fps
            self.preset = preset
            self.tune = tune
            self.rateControl = rateControl
            self.keyframeInterval = keyframeInterval ?? 2 * fps
            self.bFrames = bFrames
            self.threads = threads
            self.profile = profile
            self.annexB = annexB
            self.repeatHeaders = repeatHeaders
        }

        /// The tune actually given to x264 (see ``tune``).
        public var effectiveTune: String? {
            guard let tune else { return nil }
            guard bFrames > 0 else { return tune }
            let parts = tune.split(whereSeparator: { ",./-+".contains($0) })
                .filter { $0 != "zerolatency" }
            return parts.isEmpty ? nil : parts.joined(separator: ",")
        }
    }

    /// The settings the encoder was created with.
    public let settings: Settings
    /// Sequence parameter set NAL unit (type 7), without start code or length prefix.
    public let sps: [UInt8]
    /// Picture parameter set NAL unit (type 8), without start code or length prefix.
    public let pps: [UInt8]

    private let handle: OpaquePointer
    private var lastPTS: Int64?

    /// Opens an encoder. Throws `.invalidSettings` for out-of-range values or names x264
    /// does not know, `.openFailed` if x264 refuses the combination.
    public init(settings: Settings) throws(EncoderError) {
        let s = settings
        guard s.width > 0, s.height > 0, s.width % 2 == 0, s.height % 2 == 0 else {
            throw EncoderError(.invalidSettings, "dimensions must be positive and even, got \(s.width)x\(s.height)")
        }
        guard s.fps > 0, s.fps <= 1000 else { throw EncoderError(.invalidSettings, "fps out of range: \(s.fps)") }
        guard s.keyframeInterval > 0 else {
            throw EncoderError(.invalidSettings, "keyframeInterval must be > 0, got \(s.keyframeInterval)")
        }
        guard (0...16).contains(s.bFrames) else { throw EncoderError(.invalidSettings, "bFrames must be 0...16") }
        guard s.threads >= 0 else { throw EncoderError(.invalidSettings, "threads must be >= 0") }
        switch s.rateControl {
        case .crf(let v):
            guard v >= 0, v <= 51 else { throw EncoderError(.invalidSettings, "crf must be 0...51, got \(v)") }
        case .bitrate(let kbps):
            guard kbps > 0 else { throw EncoderError(.invalidSettings, "bitrate must be > 0 kbit/s") }
        }

        var p = x264_param_t()
        let presetResult = s.preset.withCString { preset in
            if let tune = s.effectiveTune {
                return tune.withCString { x264_param_default_preset(&p, preset, $0) }
            }
            return x264_param_default_preset(&p, preset, nil)
        }
        guard presetResult == 0 else {
            throw EncoderError(.invalidSettings, "unknown preset '\(s.preset)' or tune '\(s.effectiveTune ?? "")'")
        }

        p.i_log_level = X264_LOG_WARNING
        p.i_width = Int32(s.width)
        p.i_height = Int32(s.height)
        p.i_csp = X264_CSP_I420
        p.i_threads = Int32(s.threads)
        p.i_fps_num = UInt32(s.fps)
        p.i_fps_den = 1
        // Nanosecond timebase with VFR input, so pts/dts pass through in ns. The zerolatency
        // tune clears b_vfr_input (x264 would then replace the timebase with 1/fps).
        p.i_timebase_num = 1
        p.i_timebase_den = 1_000_000_000
        p.b_vfr_input = 1
        p.i_keyint_max = Int32(s.keyframeInterval)
        p.i_keyint_min = Int32(s.keyframeInterval)
        p.i_scenecut_threshold = 0
        p.i_bframe = Int32(s.bFrames)
        p.b_annexb = s.annexB ? 1 : 0
        p.b_repeat_headers = s.repeatHeaders ? 1 : 0
        switch s.rateControl {
        case .crf(let v):
            p.rc.i_rc_method = X264_RC_CRF
            p.rc.f_rf_constant = Float(v)
        case .bitrate(let kbps):
            p.rc.i_rc_method = X264_RC_ABR
            p.rc.i_bitrate = Int32(kbps)
            p.rc.i_vbv_max_bitrate = Int32(kbps)
            p.rc.i_vbv_buffer_size = Int32(kbps)
        }
        if let profile = s.profile {
            guard profile.withCString({ x264_param_apply_profile(&p, $0) }) == 0 else {
                throw EncoderError(.invalidSettings, "profile '\(profile)' unknown or incompatible with the settings")
            }
        }

        guard let h = cx264_encoder_open(&p) else {
            throw EncoderError(.openFailed, "x264_encoder_open failed for \(s.width)x\(s.height) preset \(s.preset)")
        }

        var nals: UnsafeMutablePointer<x264_nal_t>?
        var count: Int32 = 0
        let headerBytes = x264_encoder_headers(h, &nals, &count)
        var sps: [UInt8] = []
        var pps: [UInt8] = []
        if headerBytes > 0, let nals {
            for i in 0..<Int(count) {
                let nal = nals[i]
                guard nal.i_type == 7 || nal.i_type == 8, let base = nal.p_payload else { continue }
                let unit = Self.stripPrefix(UnsafeBufferPointer(start: base, count: Int(nal.i_payload)), annexB: s.annexB)
                if nal.i_type == 7 { sps = unit } else { pps = unit }
            }
        }
        guard !sps.isEmpty, !pps.isEmpty else {
            x264_encoder_close(h)
            throw EncoderError(.headersFailed, "x264_encoder_headers returned \(headerBytes) without SPS/PPS")
        }
        self.settings = s
        self.handle = h
        self.sps = sps
        self.pps = pps
    }

    deinit {
        x264_encoder_close(handle)
    }

    /// Number of pictures x264 holds internally (lookahead, B-frame reordering, frame threads).
    public var delayedFrames: Int { Int(x264_encoder_delayed_frames(handle)) }

    /// Encodes one picture. Returns zero or one access units (x264 may delay output; call
    /// ``flush()`` at the end). `pts` is in nanoseconds and must strictly increase.
    /// - Parameter forceKeyframe: make this picture an IDR frame (e.g. for a newly joined receiver).
    public func encode(_ frame: I420Frame, pts: Int64, forceKeyframe: Bool = false) throws(EncoderError) -> [EncodedVideoFrame] {
        guard frame.isWellFormed, frame.width == settings.width, frame.height == settings.height else {
            throw EncoderError(
                .wrongFrameSize,
                "expected \(settings.width)x\(settings.height) I420, got \(frame.width)x\(frame.height) with planes \(frame.y.count)/\(frame.u.count)/\(frame.v.count)")
        }
        if let lastPTS, pts <= lastPTS {
            throw EncoderError(.invalidSettings, "pts must strictly increase: \(pts) after \(lastPTS)")
        }
        lastPTS = pts

        var picIn = x264_picture_t()
        x264_picture_init(&picIn)
        picIn.img.i_csp = X264_CSP_I420
        picIn.img.i_plane = 3
        let cw = Int32(frame.width / 2)
        picIn.img.i_stride = (Int32(frame.width), cw, cw, 0)
        picIn.i_pts = pts
        if forceKeyframe { picIn.i_type = X264_TYPE_IDR }

        var picOut = x264_picture_t()
        var nals: UnsafeMutablePointer<x264_nal_t>?
        var count: Int32 = 0
        // x264 copies the input into its own frame pool during the call, so borrowing the
        // arrays' storage for its duration is enough.
        let result = frame.y.withUnsafeBufferPointer { y in
            frame.u.withUnsafeBufferPointer { u in
                frame.v.withUnsafeBufferPointer { v in
                    picIn.img.plane = (
                        UnsafeMutablePointer(mutating: y.baseAddress),
                        UnsafeMutablePointer(mutating: u.baseAddress),
                        UnsafeMutablePointer(mutating: v.baseAddress),
                        nil
                    )
                    return x264_encoder_encode(handle, &nals, &count, &picIn, &picOut)
                }
            }
        }
        guard result >= 0 else { throw EncoderError(.encodeFailed(result), "x264_encoder_encode failed (\(result))") }
        if result == 0 { return [] }
        return [Self.accessUnit(nals: nals, count: count, picture: picOut)]
    }

    /// Drains every delayed picture. Call once at the end of the stream; the encoder should
    /// not be fed again afterwards.
    public func flush() throws(EncoderError) -> [EncodedVideoFrame] {
        var out: [EncodedVideoFrame] = []
        while x264_encoder_delayed_frames(handle) > 0 {
            var picOut = x264_picture_t()
            var nals: UnsafeMutablePointer<x264_nal_t>?
            var count: Int32 = 0
            let result = x264_encoder_encode(handle, &nals, &count, nil, &picOut)
            guard result >= 0 else { throw EncoderError(.encodeFailed(result), "x264 flush failed (\(result))") }
            if result > 0 { out.append(Self.accessUnit(nals: nals, count: count, picture: picOut)) }
        }
        return out
    }

    /// Copies the NAL payloads out: they are only valid until the next x264 call.
    private static func accessUnit(nals: UnsafeMutablePointer<x264_nal_t>?, count: Int32, picture: x264_picture_t) -> EncodedVideoFrame {
        var data: [UInt8] = []
        if let nals {
            var total = 0
            for i in 0..<Int(count) { total += Int(nals[i].i_payload) }
            data.reserveCapacity(total)
            for i in 0..<Int(count) {
                let nal = nals[i]
                if let base = nal.p_payload {
                    data.append(contentsOf: UnsafeBufferPointer(start: base, count: Int(nal.i_payload)))
                }
            }
        }
        return EncodedVideoFrame(data: data, pts: picture.i_pts, dts: picture.i_dts, isKeyframe: picture.b_keyframe != 0)
    }

    private static func stripPrefix(_ bytes: UnsafeBufferPointer<UInt8>, annexB: Bool) -> [UInt8] {
        if !annexB { return bytes.count > 4 ? Array(bytes[4...]) : [] }
        var i = 0
        while i < bytes.count, bytes[i] == 0 { i += 1 }
        guard i >= 2, i < bytes.count, bytes[i] == 1 else { return Array(bytes) }
        return Array(bytes[(i + 1)...])
    }
}

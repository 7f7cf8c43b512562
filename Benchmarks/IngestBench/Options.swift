#if canImport(Glibc)
import Glibc
#endif
import BenchSupport

/// Command line of ingest-bench. Defaults give the documented sweep.
struct Options {
    enum Pace: String {
        /// Each agent sends a sample when its media time comes, as a live camera would.
        case realtime
        /// Each agent sends as fast as TCP and the server take it (a throughput ceiling).
        case max
    }

    var serverBinary = ""
    var sessions: [Int] = [1, 8, 32, 64, 128, 192, 256, 320, 384, 448]
    var pace = Pace.realtime
    var seconds = 30
    var compareFFmpeg = true
    /// The N values at which ffmpeg runs too (each ffmpeg process holds ~60 MiB).
    var ffmpegSessions: Set<Int> = [1, 8, 32, 64, 128]
    /// Soak instead of a sweep: this many minutes at `soakSessions`.
    var soakMinutes: Int?
    var soakSessions = 32
    var contentSeconds = 30
    /// record-server's fsync policy ("fragment" is its default; "none" to measure what fsync costs).
    var fsync = "fragment"
    /// Max pace: media length of the stream each ffmpeg reads as fast as it can.
    var maxStreamSeconds = 600
    var width = 1280
    var height = 720
    var fps = 30
    var videoKbps = 4000
    var clientThreads = 1
    var markdown = false
    var cacheDirectory: String?
    var workDirectory: String?
    var keep = false
    /// Stop the sweep at the first N that does not keep up.
    var stopWhenBehind = true
    /// Catch-up mode instead of the sweep: live, cut off, resume with the backlog (issue 14).
    var catchUp = false
    var liveSeconds = 20
    var outageSeconds = 60
    var catchUpLimitSeconds = 120
    /// Files per catch-up step checked with ffprobe (all N would take longer than the step).
    var catchUpVerify = 8

    static let usage = """
    ingest-bench: N concurrent agents replaying pre-encoded 2×720p30 H.264 + Opus to a real
    record-server process over TLS 1.3 (mutual), with ffmpeg receiving the same content over TLS
    as the side-by-side peer. Tables go to stdout, progress to stderr.

      --server-binary PATH   record-server to run (scripts/bench-ingest.sh passes the release build)
      --sessions LIST        comma-separated N values for the sweep (default 1,8,32,64,128,192,256,320,384,448)
      --pace realtime|max    realtime: samples at their media time (default); max: as fast as accepted
      --seconds S            realtime pace: media seconds each session sends (default 30)
      --max-stream-seconds S max pace: media seconds each session sends, ours and ffmpeg alike (default 600)
      --no-ffmpeg            skip the ffmpeg side-by-side runs
      --ffmpeg-sessions LIST N values at which ffmpeg runs too (default 1,8,32,64,128; ~60 MiB per process)
      --keep-going           run every N even after one fails to keep up
      --soak-minutes M       instead of the sweep: M minutes at --soak-sessions (default 32), RSS every 10 s
      --content-seconds S    length of the encoded content, looped (default 30)
      --fsync fragment|none  record-server's fsync policy (default fragment, its production default)
      --video-kbps K         x264 bitrate per camera (default 4000)
      --size WxH / --fps F   camera format (default 1280x720, 30)
      --client-threads T     event-loop threads of the load generator (default 1)
      --cache-dir DIR        where the encoded content is cached
      --work-dir DIR         data directories and certificates (default: a new directory under /tmp)
      --keep                 keep the work directory
      --markdown             tables as Markdown (for docs/benchmarks.md)

    Catch-up mode (issue 14): each agent streams live, is cut off, buffers, then resumes its
    session and sends the backlog as fast as the server reads it (default N: 1,64,256).
      --catch-up             run catch-up steps instead of the sweep (no ffmpeg)
      --live-seconds S       live streaming before the cut (default 20)
      --outage-seconds S     how long the agents are cut off (default 60)
      --catch-up-limit S     longest wait for a session to be live again after resuming (default 120)
      --catch-up-verify K    files per step checked with ffprobe (default 8)
    """

    static func parse(_ args: [String]) throws -> Options {
        var o = Options()
        var i = 0
        func value() throws -> String {
            i += 1
            guard i < args.count else { throw BenchError("\(args[i - 1]) needs a value") }
            return args[i]
        }
        func positive(_ s: String) throws -> Int {
            guard let n = Int(s), n > 0 else { throw BenchError("expected a positive integer, got \"\(s)\"") }
            return n
        }
        while i < args.count {
            switch args[i] {
            case "--server-binary": o.serverBinary = try value()
            case "--sessions": o.sessions = try value().split(separator: ",").map { try positive(String($0)) }
            case "--pace":
                let v = try value()
                guard let p = Pace(rawValue: v) else { throw BenchError("--pace must be realtime or max, not \"\(v)\"") }
                o.pace = p
            case "--seconds": o.seconds = try positive(try value())
            case "--no-ffmpeg": o.compareFFmpeg = false
            case "--ffmpeg-sessions": o.ffmpegSessions = Set(try value().split(separator: ",").map { try positive(String($0)) })
            case "--keep-going": o.stopWhenBehind = false
            case "--soak-minutes": o.soakMinutes = try positive(try value())
            case "--soak-sessions": o.soakSessions = try positive(try value())
            case "--content-seconds": o.contentSeconds = try positive(try value())
            case "--fsync":
                o.fsync = try value()
                guard ["fragment", "none"].contains(o.fsync) else { throw BenchError("--fsync must be fragment or none") }
            case "--max-stream-seconds": o.maxStreamSeconds = try positive(try value())
            case "--video-kbps": o.videoKbps = try positive(try value())
            case "--size":
                let parts = try value().split(separator: "x")
                guard parts.count == 2 else { throw BenchError("--size is WxH") }
                o.width = try positive(String(parts[0]))
                o.height = try positive(String(parts[1]))
            case "--fps": o.fps = try positive(try value())
            case "--client-threads": o.clientThreads = try positive(try value())
            case "--cache-dir": o.cacheDirectory = try value()
            case "--work-dir": o.workDirectory = try value()
            case "--keep": o.keep = true
            case "--markdown": o.markdown = true
            case "--catch-up": o.catchUp = true
            case "--live-seconds": o.liveSeconds = try positive(try value())
            case "--outage-seconds": o.outageSeconds = try positive(try value())
            case "--catch-up-limit": o.catchUpLimitSeconds = try positive(try value())
            case "--catch-up-verify": o.catchUpVerify = try positive(try value())
            case "-h", "--help":
                print(usage)
                exit(0)
            default: throw BenchError("unknown option \(args[i]) (see --help)")
            }
            i += 1
        }
        if o.catchUp, !args.contains("--sessions") { o.sessions = [1, 64, 256] }
        guard !o.serverBinary.isEmpty else { throw BenchError("--server-binary is required (see --help)") }
        return o
    }
}

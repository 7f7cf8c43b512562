#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import BenchSupport
import Shared

// mux-bench: muxes an in-memory 2×720p30 H.264 + Opus recording with MP4Muxer and compares it,
// in the same run and on the same bytes, with `ffmpeg -i same.mp4 -map 0 -c copy out.mp4`;
// then measures finalize (finish()) time against recording length. See docs/benchmarks.md.

struct Options {
    var seconds = 120
    var repeats = 5
    var width = 1280
    var height = 720
    var fps = 30
    var preset = "ultrafast"
    var markdown = false
    var prefixes = [10, 30, 60, 120]
    var workDirectory: String?
    var cacheDirectory: String? = (getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp") + "/mux-bench-cache"
    var keep = false
    /// Only mux N times (durability .none) and print the timings: for profilers (perf, callgrind).
    var muxOnly: Int?

    static let usage = """
    usage: mux-bench [--seconds N] [--repeat N] [--size WxH] [--fps N] [--prefixes 10,30,60,120]
                     [--markdown] [--workdir DIR] [--cache-dir DIR | --no-cache] [--keep]
      --seconds N      length of the synthetic recording (default 120)
      --repeat N       timed repetitions per measurement, after one warm-up (default 5)
      --size WxH       size of each of the two cameras (default 1280x720)
      --fps N          frame rate of both cameras (default 30)
      --prefixes LIST  recording lengths (s) for the finalize-vs-length table (default 10,30,60,120)
      --markdown       print the results as Markdown tables (for docs/benchmarks.md)
      --workdir DIR    where the MP4 files are written (default $TMPDIR/mux-bench-<pid>, removed afterwards)
      --cache-dir DIR  where the encoded content is cached (default $TMPDIR/mux-bench-cache)
      --no-cache       always encode the content, never cache it
      --keep           keep the work directory
      --mux-only N     only run the muxer N times (.none), no ffmpeg, no tables: for perf/callgrind
    """

    static func parse(_ args: [String]) throws -> Options {
        var o = Options()
        var i = 0
        func value() throws -> String {
            i += 1
            guard i < args.count else { throw BenchError("\(args[i - 1]) needs a value\n\(usage)") }
            return args[i]
        }
        func positive(_ s: String) throws -> Int {
            guard let n = Int(s), n > 0 else { throw BenchError("not a positive integer: \(s)") }
            return n
        }
        while i < args.count {
            switch args[i] {
            case "--seconds": o.seconds = try positive(try value())
            case "--repeat": o.repeats = try positive(try value())
            case "--fps": o.fps = try positive(try value())
            case "--size":
                let parts = try value().split(separator: "x")
                guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]), w > 0, h > 0, w % 2 == 0, h % 2 == 0 else {
                    throw BenchError("--size wants WIDTHxHEIGHT with even numbers, e.g. 1280x720")
                }
                (o.width, o.height) = (w, h)
            case "--prefixes": o.prefixes = try value().split(separator: ",").map { try positive(String($0)) }
            case "--markdown": o.markdown = true
            case "--workdir": o.workDirectory = try value()
            case "--cache-dir": o.cacheDirectory = try value()
            case "--no-cache": o.cacheDirectory = nil
            case "--keep": o.keep = true
            case "--mux-only": o.muxOnly = try positive(try value())
            case "--preset": o.preset = try value()
            case "-h", "--help":
                print(usage)
                exit(0)
            default: throw BenchError("unknown option \(args[i])\n\(usage)")
            }
            i += 1
        }
        return o
    }
}

func mb(_ bytes: UInt64) -> String { format(Double(bytes) / 1e6, 1) }
func ms(_ s: Double) -> String { format(s * 1000, s < 0.01 ? 2 : 1) }


func run() throws {
    let options = try Options.parse(Array(CommandLine.arguments.dropFirst()))
    let workDirectory = options.workDirectory ?? ((getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp") + "/mux-bench-\(getpid())")
    try makeDirectory(workDirectory)
    defer { if !options.keep && options.workDirectory == nil { removeTree(workDirectory) } }
    let loadBefore = loadAverage()
    let machine = machineFacts(workDirectory: workDirectory)

    let content = try BenchContent.load(seconds: options.seconds, width: options.width, height: options.height, fps: options.fps,
                                        preset: options.preset, cacheDirectory: options.cacheDirectory)
    let tracks = content.recording.tracks
    let all = content.recording.samples[...]
    let n = options.repeats
    if let count = options.muxOnly {
        try makeDirectory(workDirectory + "/runs")
        for rep in 1...count {
            let r = try runMuxer(tracks: tracks, samples: all, durability: .none, directory: workDirectory + "/runs", baseName: "only-\(rep)")
            RandomAccessFile.remove(r.path)
            print("run \(rep): start+append \(format(r.start + r.append, 4)) s, finish \(format(r.finish, 4)) s, CPU user \(format(r.cpu.user, 4)) s sys \(format(r.cpu.system, 4)) s, \(r.samples) samples, \(mb(r.payloadBytes)) MB")
        }
        return
    }
    let sameDirectory = workDirectory + "/same"
    let runDirectory = workDirectory + "/runs"
    try makeDirectory(sameDirectory)
    try makeDirectory(runDirectory)

    // Warm-up: the first muxer run produces same.mp4, ffmpeg's input; both outputs are verified.
    progress("warm-up: muxing \(all.count) samples into same.mp4")
    let first = try runMuxer(tracks: tracks, samples: all, durability: .none, directory: sameDirectory, baseName: "same")
    let same = first.path
    let ffmpegOut = workDirectory + "/out.mp4"
    progress("warm-up: ffmpeg -c copy")
    let ffmpegWarm = try runFFmpegCopy(input: same, output: ffmpegOut)
    progress("warm-up: ours \(format(first.total, 3)) s, ffmpeg \(format(ffmpegWarm.wall, 3)) s; verifying with ffprobe")
    let probedSame = ffprobePacketCount(same)
    let probedOut = ffprobePacketCount(ffmpegOut)
    guard probedSame == all.count, probedOut == all.count else {
        throw BenchError("packet counts differ: appended \(all.count), ffprobe same.mp4 \(probedSame.map(String.init) ?? "?"), out.mp4 \(probedOut.map(String.init) ?? "?")")
    }
    let ffmpegOutSize = fileSize(ffmpegOut) ?? 0

    // Timed: ours (.none) and ffmpeg alternate, each after a sync() so neither pays for the
    // other's dirty pages; the order flips every repetition.
    var ours: [MuxRun] = []
    var peer: [ChildRun] = []
    for rep in 1...n {
        func oursOnce() throws {
            sync()
            let r = try runMuxer(tracks: tracks, samples: all, durability: .none, directory: runDirectory, baseName: "none-\(rep)")
            RandomAccessFile.remove(r.path)
            ours.append(r)
        }
        func peerOnce() throws {
            sync()
            peer.append(try runFFmpegCopy(input: same, output: ffmpegOut))
        }
        if rep % 2 == 1 { try oursOnce(); try peerOnce() } else { try peerOnce(); try oursOnce() }
        progress("rep \(rep)/\(n): ours \(format(ours.last!.total, 3)) s (append \(format(ours.last!.start + ours.last!.append, 3)), finish \(format(ours.last!.finish, 3))), ffmpeg \(format(peer.last!.wall, 3)) s")
    }
    var durable: [MuxRun] = []
    for rep in 0...n { // rep 0 is a warm-up
        sync()
        let r = try runMuxer(tracks: tracks, samples: all, durability: .fsyncEveryFragment, directory: runDirectory, baseName: "fsync-\(rep)")
        RandomAccessFile.remove(r.path)
        if rep > 0 { durable.append(r) }
        progress("fsyncEveryFragment \(rep)/\(n): \(format(r.total, 3)) s (finish \(format(r.finish, 4)) s)")
    }
    var startup: [ChildRun] = []
    for _ in 0...n { startup.append(try spawnAndWait(["ffmpeg", "-hide_banner", "-version"], quiet: true)) }
    startup.removeFirst()

    // Finalize against recording length.
    let prefixes = (options.prefixes.filter { $0 < options.seconds } + [options.seconds])
    struct FinalizePoint { var prefix: Int; var samples: Int; var moovBytes: UInt64; var fileSize: UInt64; var fsync: [Double]; var none: [Double] }
    var points: [FinalizePoint] = []
    for prefix in prefixes {
        let slice = content.samples(prefix: prefix)
        var point = FinalizePoint(prefix: prefix, samples: slice.count, moovBytes: 0, fileSize: 0, fsync: [], none: [])
        for rep in 0...n {
            for durability in [MuxerConfiguration.Durability.fsyncEveryFragment, .none] {
                sync()
                let r = try runMuxer(tracks: tracks, samples: slice, durability: durability, directory: runDirectory,
                                     baseName: "prefix-\(prefix)-\(rep)-\(durability == .none ? "none" : "fsync")")
                if point.moovBytes == 0 {
                    point.moovBytes = topLevelBoxes(r.path).first { $0.0 == "moov" }?.1 ?? 0
                    point.fileSize = r.fileSize
                }
                RandomAccessFile.remove(r.path)
                guard rep > 0 else { continue }
                if durability == .none { point.none.append(r.finish) } else { point.fsync.append(r.finish) }
            }
        }
        progress("finalize at \(prefix) s: fsync mode \(ms(median(point.fsync))) ms, .none \(ms(median(point.none))) ms")
        points.append(point)
    }
    let loadAfter = loadAverage()

    // ---- Report ----
    let payload = first.payloadBytes
    let samples = first.samples
    let md = options.markdown
    var out = ""
    func emit(_ t: Table) { out += t.render(markdown: md) + "\n" }
    func note(_ s: String) { out += (md ? s : s) + "\n" }

    var facts = machine
    facts.append(("Load average (1/5/15 min)", "\(loadBefore) before, \(loadAfter) after"))
    facts.append(("Command", (["mux-bench"] + CommandLine.arguments.dropFirst()).joined(separator: " ")))
    emit(factsTable("Machine", facts))

    var contentFacts: [(String, String)] = [
        ("Recording", "\(options.seconds) s: 2 × H.264 \(options.width)x\(options.height)@\(options.fps) (x264 \(options.preset), zerolatency, CRF 23, IDR every \(options.fps) frames) + Opus 48 kHz mono 20 ms, encoded once by SyntheticRecording, muxed from memory"),
    ]
    var byTrack: [UInt32: (count: Int, bytes: Int)] = [:]
    for s in all { byTrack[s.trackID, default: (0, 0)].count += 1; byTrack[s.trackID, default: (0, 0)].bytes += s.data.count }
    for t in tracks {
        let v = byTrack[t.id] ?? (0, 0)
        let kind = switch t.codec {
        case .h264: "H.264"
        case .opus: "Opus"
        case .unsupported(let name): name.rawValue
        }
        contentFacts.append(("Track \(t.id) \"\(t.label)\"", "\(kind), \(grouped(v.count)) samples, \(mb(UInt64(v.bytes))) MB input (\(format(Double(v.bytes) * 8 / Double(options.seconds) / 1e6, 2)) Mbit/s)"))
    }
    contentFacts.append(("Samples / payload", "\(grouped(samples)) samples, \(mb(payload)) MB of MP4 sample payload (MB = 10^6 bytes; the MB/s below count these bytes for both tools)"))
    contentFacts.append(("same.mp4", "\(mb(first.fileSize)) MB, \(first.fragments) fragments; ffprobe counts \(grouped(probedSame ?? 0)) packets; ffmpeg's copy: \(mb(ffmpegOutSize)) MB, \(grouped(probedOut ?? 0)) packets"))
    emit(factsTable("Content", contentFacts))

    func rate(_ wall: Double) -> (String, String) {
        (format(Double(payload) / 1e6 / wall, 0), grouped(Int((Double(samples) / wall).rounded())))
    }
    let ffWall = peer.map(\.wall)
    let ffMedian = median(ffWall)
    var t = Table("Throughput (\(n) timed runs each after one warm-up; median, min in brackets)",
                  header: ["Run", "Wall s", "MB/s", "Samples/s", "CPU s (user+sys)", "Peak RSS MiB", "Speed vs ffmpeg"])
    func row(_ name: String, _ walls: [Double], cpu: [Double], rss: String, versus: Bool = true) {
        let m = median(walls)
        let (mbs, sps) = rate(m)
        let (mbsMax, _) = rate(walls.min()!)
        t.add([name, "\(format(m, 3)) [\(format(walls.min()!, 3))]", "\(mbs) [\(mbsMax)]", sps,
               cpu.isEmpty ? "" : format(median(cpu), 3), rss, versus ? format(ffMedian / m, 2) + "×" : ""])
    }
    func rssCell(_ runs: [MuxRun]) -> String {
        let v = runs.compactMap(\.peakExtraRSSKiB)
        return v.isEmpty ? "n/a" : "+" + format(Double(v.max()!) / 1024, 1)
    }
    row("MP4Muxer .none, start+append+finish", ours.map(\.total), cpu: ours.map(\.cpu.total), rss: rssCell(ours))
    row("  of which start+append", ours.map { $0.start + $0.append }, cpu: [], rss: "", versus: false)
    t.add(["  of which finish (finalize)", "\(format(median(ours.map(\.finish)), 3)) [\(format(ours.map(\.finish).min()!, 3))]", "", "", "", "", ""])
    row("ffmpeg -c copy (whole process)", ffWall, cpu: peer.map(\.cpu.total),
        rss: format(Double(peer.map(\.maxRSSKiB).max()!) / 1024, 1))
    row("MP4Muxer .fsyncEveryFragment (default)", durable.map(\.total), cpu: durable.map(\.cpu.total), rss: rssCell(durable))
    t.add(["  of which finish (finalize)", "\(format(median(durable.map(\.finish)), 4)) [\(format(durable.map(\.finish).min()!, 4))]", "", "", "", "", ""])
    t.add(["ffmpeg -version (process start only)", "\(format(median(startup.map(\.wall)), 3)) [\(format(startup.map(\.wall).min()!, 3))]",
           "", "", format(median(startup.map(\.cpu.total)), 3), "", ""])
    emit(t)

    let ratio = ffMedian / median(ours.map(\.total))
    let cpuRatio = median(peer.map(\.cpu.total)) / median(ours.map(\.cpu.total))
    note("Target ≥ 2× ffmpeg's rate (MP4Muxer .none end to end vs ffmpeg wall, medians): \(format(ratio, 2))× — \(ratio >= 2 ? "MET" : "NOT MET"); CPU-time ratio \(format(cpuRatio, 2))×.")
    note("")

    var f = Table("Finalize (finish()) time against recording length (median [min] of \(n) runs after one warm-up)",
                  header: ["Length s", "Samples", "File MB", "moov KiB", "finish ms, .fsyncEveryFragment", "finish ms, .none"])
    for p in points {
        f.add(["\(p.prefix)", grouped(p.samples), mb(p.fileSize), format(Double(p.moovBytes) / 1024, 1),
               "\(ms(median(p.fsync))) [\(ms(p.fsync.min()!))]", "\(ms(median(p.none))) [\(ms(p.none.min()!))]"])
    }
    emit(f)
    if let shortest = points.first, let longest = points.last, points.count > 1 {
        let grow = median(longest.fsync) / median(shortest.fsync)
        note("Finalize, default durability: \(ms(median(longest.fsync))) ms at \(longest.prefix) s vs \(ms(median(shortest.fsync))) ms at \(shortest.prefix) s (\(format(grow, 2))× for \(format(Double(longest.prefix) / Double(shortest.prefix), 0))× the length).")
        note("Under .none, finish() writes the moov and patches the header without fsync, like the fragments; with the default it fsyncs twice. Either way no sample data moves, so the time tracks the moov size, not the recording length.")
    }
    print(out, terminator: "")
}

do {
    try run()
} catch {
    progress("error: \(error)")
    exit(1)
}

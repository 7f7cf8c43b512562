#if canImport(Glibc)
import Glibc
#endif
import BenchSupport
import NIOCore
import NIOPosix
import RecordingTLS
import Shared

// ingest-bench: the load benchmark of record-server (issue 7). N simulated agents, each
// replaying pre-encoded 2×720p30 H.264 + Opus over mutual TLS 1.3, against a real
// record-server process; ffmpeg receiving the same content over TLS and writing MP4 with
// -c copy (one process per session) is measured in the same run. See docs/benchmarks.md.

func mib(_ kib: Int) -> String { format(Double(kib) / 1024, 1) }
/// CPU s/GB split into user and kernel time ("0.41 + 1.02"): the kernel part (socket reads,
/// page-cache writes, fsync) is work any receiver of the same bytes does.
func split(_ cpu: CPUTime, payloadBytes: Int) -> String {
    let gb = Double(payloadBytes) / 1e9
    return format(cpu.user / gb, 2) + " + " + format(cpu.system / gb, 2)
}
func msec(_ s: Double) -> String { format(s * 1000, 0) }

/// Writes the content once as MP4 (our muxer) and turns it into a Matroska stream of
/// `seconds` with ffmpeg (-stream_loop, -c copy): the peer's input.
func prepareFFmpegStream(_ content: BenchContent, seconds: Int, directory: String) throws -> (bytes: ByteBuffer, payloadBytes: Int) {
    let mp4 = directory + "/content.mp4"
    if fileSize(mp4) == nil {
        var configuration = MuxerConfiguration(tracks: content.recording.tracks, directory: directory, baseName: "content",
                                               creationTime: 1_700_000_000)
        configuration.durability = .none
        let muxer = try MP4Muxer(configuration: configuration)
        try muxer.start()
        for sample in content.recording.samples { _ = try muxer.append(sample) }
        _ = try muxer.finish()
    }
    let mkv = directory + "/stream-\(seconds)s.mkv"
    let run = try spawnAndWait(["ffmpeg", "-nostdin", "-v", "error", "-y", "-stream_loop", "-1", "-i", mp4, "-t", "\(seconds)",
                                "-map", "0", "-c", "copy", "-f", "matroska", mkv])
    guard run.exitStatus == 0, let size = fileSize(mkv) else { throw BenchError("ffmpeg could not write \(mkv)") }
    let sizes = capture("ffprobe -v error -show_entries packet=size -of csv=p=0 " + shellQuote(mkv)) ?? ""
    let payload = sizes.split(separator: "\n").compactMap { Int($0.trimmingCharacters()) }.reduce(0, +)
    let file = try RandomAccessFile(path: mkv, mode: .readOnly)
    defer { file.close() }
    let bytes = try file.read(count: Int(size), at: 0)
    return (ByteBuffer(bytes: bytes), payload)
}

func makePKI(directory: String, agents: Int) throws -> BenchPKI {
    try makeDirectory(directory)
    let pki = BenchPKI(directory: directory)
    let ca = try CertificateAuthority.create()
    try writeTextFile(pki.caPath, ca.certificatePEM)
    try ca.issueServerCertificate(hostnames: ["localhost"], ipAddresses: ["127.0.0.1"])
        .write(certPath: pki.serverCertPath, keyPath: pki.serverKeyPath)
    for i in 0..<agents {
        try ca.issueAgentCertificate(agentID: agentName(i)).write(certPath: pki.agentCertPath(agentName(i)), keyPath: pki.agentKeyPath(agentName(i)))
    }
    return pki
}

func oursRow(_ s: OursStep, pace: Options.Pace) -> [String] {
    let lat = s.latencies
    return [
        "\(s.sessions)", format(s.mbps, 1), grouped(Int(Double(s.samples) / s.window)),
        format(s.serverCPU / s.window * 100, 0), format(s.serverCPU / s.window * 100 / Double(s.sessions), 2),
        mib(s.peakRSSKiB), mib((s.peakRSSKiB - s.idleRSSKiB) / s.sessions),
        msec(percentile(lat, 0.5)), msec(percentile(lat, 0.99)), msec(s.maxSendLag),
        "\(s.lost)", "\(s.filesChecked)/\(s.sessions)", format(s.loadGeneratorCPU / s.window * 100, 0),
        s.keptUp(pace: pace) ? "yes" : "NO",
    ]
}

func run() throws {
    var options = try Options.parse(Array(CommandLine.arguments.dropFirst()))
    let workDirectory = options.workDirectory ?? "/tmp/ingest-bench-\(getpid())"
    try makeDirectory(workDirectory)
    defer { if !options.keep { removeTree(workDirectory) } }
    if options.soakMinutes != nil { options.sessions = [options.soakSessions] }

    let content = try BenchContent.load(seconds: options.contentSeconds, width: options.width, height: options.height, fps: options.fps,
                                        preset: "ultrafast", videoKbps: options.videoKbps, cacheDirectory: options.cacheDirectory)
    let load = try LoadContent(content)
    let sessionMbps = Double(load.payloadBytesPerLoop) * 8 / (Double(load.loopNanos) / 1e9) / 1e6
    let maxN = options.sessions.max() ?? 1
    progress("content: \(load.samples.count) samples per \(content.seconds) s loop, \(format(sessionMbps, 2)) Mbit/s per session")
    progress("certificates: CA, server, \(maxN) agents")
    let pki = try makePKI(directory: workDirectory + "/pki", agents: maxN)
    let group = MultiThreadedEventLoopGroup(numberOfThreads: options.clientThreads)
    defer { try? group.syncShutdownGracefully() }
    var env = BenchEnvironment(options: options, content: load, pki: pki, workDirectory: workDirectory, group: group)

    var facts = machineFacts(workDirectory: workDirectory)
    facts += [
        ("Content", "2 × \(options.width)x\(options.height)@\(options.fps) H.264 (x264 ultrafast, \(options.videoKbps) kbit/s each, GOP 1 s) + Opus mono 48 kHz; \(content.seconds) s loop, \(format(sessionMbps, 2)) Mbit/s and \(Int(Double(load.samples.count) / Double(content.seconds))) samples/s per session"),
        ("Transport", "TLS 1.3 with client certificates (ours); TLS to ffmpeg's gnutls listener (peer), loopback"),
        ("record-server", "\(options.serverBinary), production defaults: " +
            (options.fsync == "fragment" ? "fsync every fragment" : "**fsync off (--fsync none)**") + ", 1 s fragments, admin API off"),
        ("Load generator", "this process, \(options.clientThreads) event-loop thread(s), on the same 2 cores as the server"),
        ("Pace", options.pace == .realtime ? "realtime: every sample sent at its media time"
            : "max: each agent sends \(options.maxStreamSeconds) s of media as fast as the server accepts (≤ 4096 unacknowledged samples); each ffmpeg reads the same \(options.maxStreamSeconds) s as fast as it can"),
    ]
    if options.catchUp {
        facts.append(("Catch-up", "\(options.liveSeconds) s live, cut off for \(options.outageSeconds) s (agents keep their media clock and buffer), " +
            "then SessionResume and every due sample as fast as the connection takes it; caught up = an Ack less than 2 s behind its sample's media time; " +
            "record-server's resume window raised to \(options.outageSeconds + options.catchUpLimitSeconds + 60) s"))
    }
    print(factsTable("Setup", facts).render(markdown: options.markdown))

    if options.catchUp {
        try catchUp(env, options: options)
        return
    }
    if let minutes = options.soakMinutes {
        try soak(&env, minutes: minutes)
        return
    }

    // Media seconds each session carries: the same for ours and ffmpeg, so both write the same bytes.
    let streamSeconds = options.pace == .realtime ? options.seconds : options.maxStreamSeconds
    var oursTable = Table("record-server, \(options.pace.rawValue) pace, \(streamSeconds) s of media per session", header: [
        "N", "Mbit/s", "samples/s", "server CPU %", "CPU %/session", "RSS MiB", "RSS MiB/session", "ack p50 ms", "ack p99 ms",
        "max send lag ms", "lost", "files verified", "load-gen CPU %", "kept up",
    ])
    var peerTable = Table("Side by side: CPU per GB ingested (media payload), same N and pace", header: [
        "N", "ours Mbit/s", "ours CPU s/GB", "ours user + sys", "ffmpeg Mbit/s", "ffmpeg CPU s/GB", "ffmpeg user + sys", "ours ÷ ffmpeg",
        "ffmpeg RSS MiB (sum)", "ffmpeg max lag ms", "ffmpeg ok",
    ])
    var firstBehind: Int?
    for n in options.sessions {
        progress("N=\(n): \(n) agents → record-server, \(streamSeconds) s of media each")
        let ours = try runOurs(env, sessions: n, seconds: streamSeconds, pace: options.pace, label: "ours-\(n)")
        oursTable.add(oursRow(ours, pace: options.pace))
        progress("  " + oursRow(ours, pace: options.pace).joined(separator: " | "))
        for f in ours.failures.prefix(3) + ours.verifyProblems.prefix(3) { progress("  problem: \(f)") }
        if options.compareFFmpeg, options.ffmpegSessions.contains(n) {
            if env.ffmpegStreams[streamSeconds] == nil {
                progress("preparing the \(streamSeconds) s Matroska stream for ffmpeg")
                env.ffmpegStreams[streamSeconds] = try prepareFFmpegStream(content, seconds: streamSeconds, directory: workDirectory)
            }
            progress("N=\(n): \(n) × ffmpeg, \(streamSeconds) s of media each")
            do {
                let peer = try runFFmpeg(env, sessions: n, seconds: streamSeconds, pace: options.pace, label: "ffmpeg-\(n)")
                for f in peer.failures.prefix(3) { progress("  ffmpeg problem: \(f)") }
                peerTable.add([
                    "\(n)", format(ours.mbps, 1), format(ours.cpuPerGB, 2), split(ours.serverCPUTime, payloadBytes: ours.payloadBytes),
                    format(peer.mbps, 1), format(peer.cpuPerGB, 2), split(peer.cpuTime, payloadBytes: peer.payloadBytes),
                    format(ours.cpuPerGB / peer.cpuPerGB, 2), mib(peer.peakRSSKiB), msec(peer.maxSendLag), peer.failures.isEmpty ? "yes" : "NO",
                ])
                progress("  ours \(format(ours.cpuPerGB, 2)) CPU s/GB, ffmpeg \(format(peer.cpuPerGB, 2)) CPU s/GB")
            } catch {
                // One failed peer step is reported in its row; the sweep goes on.
                progress("  ffmpeg step failed: \(error)")
                peerTable.add(["\(n)", format(ours.mbps, 1), format(ours.cpuPerGB, 2), split(ours.serverCPUTime, payloadBytes: ours.payloadBytes),
                               "-", "-", "-", "-", "-", "-", "NO: \(error)"])
            }
        }
        if !ours.keptUp(pace: options.pace), firstBehind == nil {
            firstBehind = n
            if options.stopWhenBehind { break }
        }
    }
    print(oursTable.render(markdown: options.markdown))
    if options.compareFFmpeg { print(peerTable.render(markdown: options.markdown)) }
    if options.pace == .realtime {
        print(firstBehind.map { "First N that did not keep up: \($0)\n" } ?? "Every N kept up.\n")
    }
}

func catchUp(_ env: BenchEnvironment, options: Options) throws {
    let plan = CatchUpPlan(liveSeconds: options.liveSeconds, outageSeconds: options.outageSeconds, limitSeconds: options.catchUpLimitSeconds)
    var table = Table("Catch-up after a \(plan.outageSeconds) s outage (\(options.serverBinary))", header: catchUpHeader)
    for n in options.sessions {
        progress("N=\(n): \(plan.liveSeconds) s live, \(plan.outageSeconds) s cut off, then the backlog (at most \(plan.limitSeconds) s to catch up); load \(loadAverage())")
        let step = try runCatchUp(env, sessions: n, plan: plan, label: "catch-up-\(n)")
        table.add(catchUpRow(step, plan: plan))
        progress("  " + catchUpRow(step, plan: plan).joined(separator: " | "))
        for f in (step.failures + step.problems).prefix(5) { progress("  problem: \(f)") }
    }
    print(table.render(markdown: options.markdown))
}

func soak(_ env: inout BenchEnvironment, minutes: Int) throws {
    let n = env.options.soakSessions
    progress("soak: \(n) agents, realtime, \(minutes) min; RSS sampled every 10 s")
    let step = try runOurs(env, sessions: n, seconds: minutes * 60, pace: .realtime, label: "soak", sampleEvery: 10)
    var t = Table("Soak: \(n) sessions, realtime, \(minutes) min (\(format(step.mbps, 1)) Mbit/s)", header: ["t s", "server RSS MiB", "server CPU %"])
    for (time, rss, cpu) in step.timeline { t.add([format(time, 0), mib(rss), format(cpu, 0)]) }
    print(t.render(markdown: env.options.markdown))
    let rss = step.timeline.map(\.1)
    let afterWarmup = step.timeline.filter { $0.0 >= 60 }.map(\.1)
    var summary = Table("Soak summary", header: ["Item", "Value"], leftColumns: [0, 1])
    summary.add(["samples sent / lost", "\(grouped(step.samples)) / \(step.lost)"])
    summary.add(["files verified (ffprobe packet count)", "\(step.filesChecked)/\(n)"])
    summary.add(["ack p50 / p99", "\(msec(percentile(step.latencies, 0.5))) / \(msec(percentile(step.latencies, 0.99))) ms"])
    summary.add(["RSS idle before the agents", "\(mib(step.idleRSSKiB)) MiB"])
    if let first = afterWarmup.first, let last = afterWarmup.last, let lo = afterWarmup.min(), let hi = afterWarmup.max() {
        summary.add(["RSS at 1 min → end", "\(mib(first)) → \(mib(last)) MiB"])
        summary.add(["RSS range after 1 min", "\(mib(lo)) … \(mib(hi)) MiB"])
    }
    summary.add(["RSS peak", "\(mib(rss.max() ?? 0)) MiB"])
    summary.add(["problems", (step.failures + step.verifyProblems).isEmpty ? "none" : (step.failures + step.verifyProblems).prefix(3).joined(separator: "; ")])
    print(summary.render(markdown: env.options.markdown))
}

do {
    try run()
} catch {
    progress("error: \(error)")
    exit(1)
}

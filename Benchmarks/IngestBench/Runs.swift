#if canImport(Glibc)
import Glibc
#endif
import BenchSupport
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import RecordingTLS
import Shared
import WireProtocolNIO

/// Everything a run needs that does not change between steps.
struct BenchEnvironment {
    var options: Options
    var content: LoadContent
    var pki: BenchPKI
    var workDirectory: String
    var group: MultiThreadedEventLoopGroup
    /// Matroska streams for ffmpeg, by length in seconds (made once each).
    var ffmpegStreams: [Int: (bytes: ByteBuffer, payloadBytes: Int)] = [:]
}

/// One step of ours: N agents → one record-server.
struct OursStep {
    var sessions: Int
    var agents: [AgentResult]
    var window: Double
    /// User and system CPU seconds of record-server over the step.
    var serverCPUTime: CPUTime
    var serverCPU: Double { serverCPUTime.total }
    var serverTotal: ChildRun
    var idleRSSKiB: Int
    var peakRSSKiB: Int
    var loadGeneratorCPU: Double
    /// (seconds since start, RSS KiB, CPU % of one core over the last interval) every `sampleEvery` s.
    var timeline: [(Double, Int, Double)]
    var filesChecked: Int
    var verifyProblems: [String]

    var payloadBytes: Int { agents.reduce(0) { $0 + $1.payloadBytesSent } }
    var samples: Int { agents.reduce(0) { $0 + $1.samplesSent } }
    var lost: Int { agents.reduce(0) { $0 + $1.lost } }
    var failures: [String] { agents.compactMap { a in a.failure.map { "\(a.agentID): \($0)" } } }
    var mbps: Double { Double(payloadBytes) * 8 / window / 1e6 }
    var latencies: [UInt32] { agents.flatMap(\.ackLatenciesMicros).sorted() }
    var maxSendLag: Double { Double(agents.map(\.maxSendLagNanos).max() ?? 0) / 1e9 }
    /// CPU seconds of record-server per GB (10⁹ bytes) of media payload ingested.
    var cpuPerGB: Double { serverCPU / (Double(payloadBytes) / 1e9) }

    /// Kept up: every session closed cleanly with nothing lost, files verified, no sample sent
    /// more than 0.5 s late, and 99% of samples acknowledged within 2 s (fragments are 1 s).
    func keptUp(pace: Options.Pace) -> Bool {
        guard failures.isEmpty, lost == 0, verifyProblems.isEmpty else { return false }
        if pace == .max { return true }
        return maxSendLag <= 0.5 && percentile(latencies, 0.99) <= 2.0
    }
}

/// One step of the peer: N ffmpeg processes.
struct FFmpegStep {
    var sessions: Int
    var streams: [StreamResult]
    var window: Double
    var cpuTime: CPUTime
    var cpu: Double { cpuTime.total }
    var peakRSSKiB: Int
    var payloadBytes: Int
    var failures: [String]
    var cpuPerGB: Double { cpu / (Double(payloadBytes) / 1e9) }
    var mbps: Double { Double(payloadBytes) * 8 / window / 1e6 }
    var maxSendLag: Double { Double(streams.map(\.maxSendLagNanos).max() ?? 0) / 1e9 }
}

/// Value at quantile `q` of sorted microsecond latencies, in seconds.
func percentile(_ sorted: [UInt32], _ q: Double) -> Double {
    guard !sorted.isEmpty else { return .nan }
    let i = min(sorted.count - 1, Int((Double(sorted.count - 1) * q).rounded()))
    return Double(sorted[i]) / 1e6
}

/// Counts completions from event-loop callbacks for the thread that waits.
final class Completions: Sendable {
    private let count = NIOLockedValueBox(0)
    func add() { count.withLockedValue { $0 += 1 } }
    var value: Int { count.withLockedValue { $0 } }

    /// A promise on `loop` that is counted here when it completes.
    func promise<T: Sendable>(on loop: any EventLoop, of type: T.Type) -> EventLoopPromise<T> {
        let promise = loop.makePromise(of: type)
        promise.futureResult.whenComplete { _ in self.add() }
        return promise
    }
}

extension BenchPKI {
    /// The TLS client context of simulated agent `id`, with its own certificate.
    func agentContext(_ id: String) throws -> NIOSSLContext {
        try NIOSSLContext(configuration: TLSConfigurations.client(caPEMPath: caPath, certificatePEMPath: agentCertPath(id),
                                                                  privateKeyPEMPath: agentKeyPath(id), serverHostname: "127.0.0.1"))
    }
}

/// The MP4 files record-server wrote under `dataDirectory`, sorted.
func recordings(in dataDirectory: String) -> [String] {
    (capture("find " + shellQuote(dataDirectory) + " -name '*.mp4' | sort") ?? "").split(separator: "\n").map(String.init)
}

/// ffprobe's packet count of each agent's file against the samples it sent: (files checked, problems).
func checkPacketCounts(files: [String], sessions: Int, sent: [(agentID: String, samples: Int)]) -> (Int, [String]) {
    var problems: [String] = []
    var checked = 0
    if files.count != sessions { problems.append("\(files.count) MP4 files for \(sessions) sessions") }
    for (agentID, samples) in sent {
        guard let file = files.first(where: { $0.contains("-\(agentID)") }) else {
            problems.append("no file for \(agentID)")
            continue
        }
        let packets = ffprobePacketCount(file) ?? -1
        if packets != samples { problems.append("\(file): ffprobe counts \(packets) packets, \(samples) sent") }
        checked += 1
    }
    return (checked, problems)
}

/// Runs N simulated agents against a fresh record-server process for `seconds` of media.
func runOurs(_ env: BenchEnvironment, sessions n: Int, seconds: Int, pace: Options.Pace, label: String,
             sampleEvery: Double = 0.25) throws -> OursStep {
    let directory = env.workDirectory + "/\(label)"
    // The recordings of one step stay on disk until it is verified: refuse a step that would
    // fill the disk.
    let perSecond = Double(env.content.payloadBytesPerLoop) / (Double(env.content.loopNanos) / 1e9) * Double(n)
    let needed = UInt64(perSecond * Double(seconds) * 1.05) + (1 << 30)
    if let free = freeBytes(at: env.workDirectory), free < needed {
        throw BenchError("\(label) would write about \(needed >> 30) GiB but only \(free >> 30) GiB are free under \(env.workDirectory); " +
                         "use fewer sessions or seconds, or --work-dir on a larger file system")
    }
    let server = try ServerUnderTest(binary: env.options.serverBinary, pki: env.pki, directory: directory, maxSessions: n + 8,
                                   fsync: env.options.fsync)
    usleep(200_000)
    let idleRSS = server.rssKiB
    let cpu0 = server.cpuTime
    let load0 = CPUTime.self_()
    let completions = Completions()
    var futures: [EventLoopFuture<AgentResult>] = []
    for i in 0..<n {
        let id = agentName(i)
        let context = try env.pki.agentContext(id)
        let loop = env.group.next()
        let done = completions.promise(on: loop, of: AgentResult.self)
        futures.append(done.futureResult)
        let content = env.content
        let sessionID = try Identifier(validating: "\(label)-\(id)")
        let connected = ClientBootstrap(group: loop)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(try NIOSSLClientHandler(context: context, serverHostname: nil))
                    try sync.addHandler(MessageCodecHandler())
                    try sync.addHandler(LoadAgentHandler(content: content, agentID: id, sessionID: sessionID, seconds: seconds,
                                                         pace: pace, done: done))
                }
            }
            .connect(host: "127.0.0.1", port: server.port)
        connected.whenFailure { done.fail($0) }
    }
    // Watch the server while the agents run.
    var peak = idleRSS
    var timeline: [(Double, Int, Double)] = []
    let t0 = monotonicNanos()
    var lastSample = (t0, cpu0.total)
    var nextReport = 0.0
    while completions.value < n {
        usleep(UInt32(min(sampleEvery, 0.25) * 1e6))
        let rss = server.rssKiB
        peak = max(peak, rss)
        let now = monotonicNanos()
        if elapsed(from: lastSample.0, to: now) >= sampleEvery {
            let cpu = server.cpuSeconds
            timeline.append((elapsed(from: t0, to: now), rss, (cpu - lastSample.1) / elapsed(from: lastSample.0, to: now) * 100))
            lastSample = (now, cpu)
        }
        if sampleEvery >= 5, elapsed(from: t0, to: now) >= nextReport {
            progress("  \(label): \(Int(elapsed(from: t0, to: now))) s, server RSS \(format(Double(rss) / 1024, 1)) MiB")
            nextReport += 60
        }
    }
    let cpu1 = server.cpuTime
    let loadCPU = (CPUTime.self_() - load0).total
    var agents: [AgentResult] = []
    for (i, f) in futures.enumerated() {
        do { agents.append(try f.wait()) } catch {
            var failed = AgentResult(agentID: agentName(i))
            failed.failure = "\(error)"
            agents.append(failed)
        }
    }
    let total = try server.stop()
    let started = agents.map(\.startedAt).filter { $0 > 0 }.min() ?? t0
    let ended = agents.map(\.endedAt).max() ?? monotonicNanos()
    var step = OursStep(sessions: n, agents: agents, window: elapsed(from: started, to: ended), serverCPUTime: CPUTime(user: cpu1.user - cpu0.user, system: cpu1.system - cpu0.system),
                        serverTotal: total, idleRSSKiB: idleRSS, peakRSSKiB: peak, loadGeneratorCPU: loadCPU, timeline: timeline,
                        filesChecked: 0, verifyProblems: [])
    verify(&step, dataDirectory: server.dataDirectory)
    if total.exitStatus != 0 { step.verifyProblems.append("record-server exited with status \(total.exitStatus) on SIGTERM (log: \(server.logPath))") }
    if !env.options.keep { removeTree(server.dataDirectory) }
    return step
}

/// Independent check of what the server wrote: one MP4 per session, ffprobe's packet count
/// equal to the samples that agent sent, and one file fully decoded by ffmpeg without errors.
func verify(_ step: inout OursStep, dataDirectory: String) {
    let files = recordings(in: dataDirectory)
    let (checked, problems) = checkPacketCounts(files: files, sessions: step.sessions,
                                                sent: step.agents.map { ($0.agentID, $0.samplesSent) })
    step.filesChecked = checked
    step.verifyProblems += problems
    if let first = files.first {
        let errors = capture("ffmpeg -nostdin -v error -i " + shellQuote(first) + " -f null - 2>&1") ?? "ffmpeg failed"
        if !errors.isEmpty { step.verifyProblems.append("ffmpeg decoding \(first): \(errors.prefix(300))") }
    }
}

/// Runs N ffmpeg processes, each receiving the Matroska stream over TLS and writing MP4.
func runFFmpeg(_ env: BenchEnvironment, sessions n: Int, seconds: Int, pace: Options.Pace, label: String) throws -> FFmpegStep {
    guard let stream = env.ffmpegStreams[seconds] else { throw BenchError("no ffmpeg stream of \(seconds) s prepared") }
    let directory = env.workDirectory + "/\(label)"
    try makeDirectory(directory)
    var children: [Child] = []
    var ports: [Int] = []
    defer { for c in children { kill(c.pid, SIGKILL); _ = try? waitChild(c) } }
    for i in 0..<n {
        let port = try freeLoopbackPort(from: (ports.last ?? 20_000) + 1)
        ports.append(port)
        children.append(try spawnChild(FFmpegPeer.arguments(port: port, pki: env.pki, output: directory + "/out-\(i).mp4"),
                                       quiet: true, stderrPath: directory + "/ffmpeg-\(i).log"))
    }
    let tls = try TLSConfigurations.client(caPEMPath: env.pki.caPath, certificatePEMPath: nil, privateKeyPEMPath: nil,
                                           serverHostname: "127.0.0.1")
    let context = try NIOSSLContext(configuration: tls)
    let completions = Completions()
    var futures: [EventLoopFuture<StreamResult>] = []
    let duration = Int64(seconds) * 1_000_000_000
    for i in 0..<n {
        let loop = env.group.next()
        let done = loop.makePromise(of: StreamResult.self)
        done.futureResult.whenComplete { _ in completions.add() }
        futures.append(done.futureResult)
        try connectWithRetry(port: ports[i], group: loop, timeoutSeconds: 120, listener: children[i],
                             log: directory + "/ffmpeg-\(i).log") { channel in
            let sync = channel.pipeline.syncOperations
            try sync.addHandler(try NIOSSLClientHandler(context: context, serverHostname: nil))
            try sync.addHandler(StreamSenderHandler(stream: stream.bytes, durationNanos: duration, pace: pace, done: done))
        }
    }
    var peak = 0
    while completions.value < n {
        usleep(250_000)
        peak = max(peak, children.reduce(0) { $0 + (processStatusKiB($1.pid, "VmRSS") ?? 0) })
    }
    var cpu = CPUTime(user: 0, system: 0)
    var failures: [String] = []
    for (i, c) in children.enumerated() {
        let run = try waitChild(c)
        cpu.user += run.cpu.user
        cpu.system += run.cpu.system
        peak = max(peak, 0)
        if run.exitStatus != 0 {
            failures.append("ffmpeg \(i) exited \(run.exitStatus): " + (readTextFile(directory + "/ffmpeg-\(i).log") ?? "").prefix(200))
        }
    }
    children = []
    var streams: [StreamResult] = []
    for f in futures { streams.append(try f.wait()) }
    failures += streams.compactMap(\.failure)
    if ffprobePacketCount(directory + "/out-0.mp4") == nil { failures.append("ffprobe cannot read ffmpeg's out-0.mp4") }
    let started = streams.map(\.startedAt).filter { $0 > 0 }.min() ?? 0
    let ended = streams.map(\.endedAt).max() ?? 0
    if !env.options.keep { removeTree(directory) }
    return FFmpegStep(sessions: n, streams: streams, window: elapsed(from: started, to: ended), cpuTime: cpu, peakRSSKiB: peak,
                      payloadBytes: stream.payloadBytes * n, failures: failures)
}

/// Connects to a listener that may not be up yet (ffmpeg accepts exactly one connection, so
/// it cannot be probed first): retries refused connections every 50 ms.
func connectWithRetry(port: Int, group: any EventLoop, timeoutSeconds: Double, listener: Child, log: String,
                      _ initialize: @escaping @Sendable (any Channel) throws -> Void) throws {
    let deadline = monotonicNanos() + UInt64(timeoutSeconds * 1e9)
    while true {
        do {
            _ = try ClientBootstrap(group: group)
                .channelInitializer { channel in channel.eventLoop.makeCompletedFuture { try initialize(channel) } }
                .connect(host: "127.0.0.1", port: port).wait()
            return
        } catch {
            // A listener that exited will never accept: say why instead of waiting out the deadline.
            if kill(listener.pid, 0) != 0 || isZombie(listener.pid) {
                throw BenchError("ffmpeg for port \(port) exited before accepting: \((readTextFile(log) ?? "").prefix(300))")
            }
            guard monotonicNanos() < deadline else { throw BenchError("cannot connect to ffmpeg on port \(port): \(error)") }
            usleep(50_000)
        }
    }
}

/// Whether `pid` (a child not yet reaped) has exited.
func isZombie(_ pid: pid_t) -> Bool {
    guard let stat = readTextFile("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return true }
    return stat[stat.index(after: close)...].split(separator: " ").first == "Z"
}

func agentName(_ i: Int) -> String { "bench-agent-\(i)" }

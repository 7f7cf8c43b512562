import ArgumentParser
import Foundation
import Logging
import NIOPosix
import NIOSSL
import RecordingTLS
import WireProtocol

/// Entry point of the `capture-agent` executable.
public enum CaptureAgentMain {
    public static func main() async {
        await CaptureAgentCommand.main()
    }
}

/// `capture-agent`: captures cameras and microphones and streams them to record-server.
struct CaptureAgentCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "capture-agent",
        abstract: "Capture cameras (V4L2), microphones (ALSA), test patterns and files; encode with x264/Opus; stream to record-server over TLS.",
        subcommands: [RunCommand.self, DevicesCommand.self],
        defaultSubcommand: nil)

    init() {}
}

/// `capture-agent devices`.
struct DevicesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices", abstract: "List V4L2 cameras (formats, sizes) and ALSA capture devices.")

    init() {}

    func run() throws {
        print(DeviceListing.report(), terminator: "")
    }
}

/// `capture-agent run`.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Connect to record-server and record when asked (or at once with --record).",
        discussion: """
            Sources (repeat --source): \(SourceSpec.usage)
            Flags override the values of --config FILE (JSON, see deploy/capture-agent.example.json).
            Several servers (--server A:7443,B:7443, or --server repeated): each (re)connection tries the next one, so a session whose server's host is lost resumes on another server of the fleet.
            SIGINT/SIGTERM stop gracefully (tracks end, the session is closed and finalized; at most --stop-timeout seconds); a second one exits at once.
            """)

    @Option(help: "JSON configuration file; flags override it.") var config: String?
    @Option(help: "record-server address, HOST:PORT (port defaults to 7443); several, comma-separated or repeated, for failover (each connection attempt tries the next).")
    public var server: [String] = []
    @Option(help: "CA certificate (PEM) that signed the server certificate.") public var ca: String?
    @Option(help: "This agent's client certificate (PEM).") public var cert: String?
    @Option(help: "This agent's private key (PEM).") public var key: String?
    @Option(help: "Bearer token, for deployments without client certificates.") var token: String?
    @Option(name: .customLong("agent-id"), help: "Agent id ([A-Za-z0-9._-], must match the certificate).") public var agentID: String?
    @Option(name: .customLong("source"), help: "NAME=KIND:ARG, e.g. front=v4l2:/dev/video0 back=test:1280x720@30 mic=alsa:default.")
    var sources: [String] = []
    @Flag(help: "Start recording at once instead of waiting for the server's StartSession.") var record = false
    @Option(name: .customLong("session-id"), help: "Session id for --record (default: <agent>-<UTC time>-<random>).") public var sessionID: String?
    @Option(help: "With --record: stop after this many seconds.") var duration: Double?
    @Option(name: .customLong("label"), help: "KEY=VALUE label on every session (repeatable).") public var labels: [String] = []
    @Option(help: "x264 preset (ultrafast … placebo).") public var preset: String?
    @Option(help: "x264 tune; \"none\" for no tune (default zerolatency).") public var tune: String?
    @Option(help: "x264 constant rate factor 0…51 (default 23).") public var crf: Double?
    @Option(name: .customLong("bitrate"), help: "x264 average bitrate in kbit/s (instead of CRF).") public var bitrateKbps: Int?
    @Option(name: .customLong("keyint"), help: "Keyframe interval in frames (default 2 s).") public var keyframeInterval: Int?
    @Option(help: "x264 threads (0 = auto).") public var threads: Int?
    @Option(help: "H.264 profile limit (baseline, main, high).") public var profile: String?
    @Option(name: .customLong("opus-bitrate"), help: "Opus bitrate in bit/s.") public var opusBitrate: Int?
    @Option(name: .customLong("opus-application"), help: "audio, voip or lowdelay.") public var opusApplication: String?
    @Option(name: .customLong("opus-complexity"), help: "Opus complexity 0…10 (default 10); lower it when a small CPU cannot encode every microphone in real time.")
    var opusComplexity: Int?
    @Option(name: .customLong("buffer-mb"), help: "Resend buffer bound in MiB (default 512); a sample stays until acknowledged (with object storage: until stored there).") public var bufferMegabytes: Int?
    @Option(name: .customLong("buffer-seconds"), help: "Resend buffer bound in seconds of media (default 300).") public var bufferSeconds: Double?
    @Option(name: .customLong("reconnect-initial-ms"), help: "First reconnect delay ceiling (default 250).") public var reconnectInitial: Int?
    @Option(name: .customLong("reconnect-max-ms"), help: "Largest reconnect delay ceiling (default 10000).") public var reconnectMax: Int?
    @Option(name: .customLong("stop-timeout"), help: "After SIGINT/SIGTERM, seconds to wait for the server to confirm the closed session before exiting anyway (default 30).")
    var stopTimeout: Double?
    @Flag(name: .customLong("fast-files"), help: "Read y4m/wav sources as fast as possible instead of in real time.") public var fastFiles = false
    @Option(name: .customLong("clock-offset"), help: ArgumentHelp(
        "Testing: stamp everything this many seconds ahead of CLOCK_MONOTONIC, as another host's clock would read.",
        discussion: "With --clock-drift-ppm, agents on one machine (the multi-host bench's network namespaces) look to the server like hosts with their own clocks."))
    var clockOffset: Double?
    @Option(name: .customLong("clock-drift-ppm"), help: "Testing: let the stamping clock run this many parts per million fast (negative: slow), at most ±1000.")
    var clockDriftPPM: Double?
    @Flag(name: .customLong("test-sources-on-whole-seconds"), help: "Testing: test sources start on a whole second of CLOCK_MONOTONIC, so agents on one machine flash and beep at the same instants.")
    var testSourcesOnWholeSeconds = false
    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error, critical.") public var logLevel: String?

    init() {}

    func run() async throws {
        let settings: AgentSettings
        let level: Logger.Level
        do {
            (settings, level) = try resolve()
        } catch {
            throw ValidationError(error.message)
        }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "capture-agent")
        for warning in settings.startupWarnings { logger.warning("\(warning)") }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let clock = settings.makeClock()
        if let skewed = clock as? SkewedClock {
            // The bench reads the true offset from this line (scripts/hardware/multihost_clock.py).
            logger.notice("testing: stamping with CLOCK_MONOTONIC + \(skewed.offset) ns, \(skewed.driftPPM) ppm fast from CLOCK_MONOTONIC \(skewed.anchor) ns")
        }
        let runtime = try AgentRuntime(settings: settings, clock: clock, logger: logger, group: group)
        let signals = [SIGINT, SIGTERM].map { sig in
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { runtime.shutdown() }
            source.resume()
            return source
        }
        defer { signals.forEach { $0.cancel() } }
        do {
            try await runtime.run()
        } catch {
            logger.error("\(error)")
            // The process exits next: a group that fails to shut down holds nothing that outlives it.
            try? await group.shutdownGracefully()
            throw ExitCode((error as? AgentRuntimeError)?.exitCode ?? 1)
        }
        // As above: the last thing before the process exits.
        try? await group.shutdownGracefully()
    }

    /// Merges the config file and the flags into settings; every problem is one clear message.
    func resolve() throws(ConfigError) -> (AgentSettings, Logger.Level) {
        let file = try config.map { path throws(ConfigError) in try AgentConfigFile.load(path: path) } ?? AgentConfigFile()

        let addresses = try serverAddresses(file)
        guard let caPath = ca ?? file.ca else { throw ConfigError("--ca CA.pem is required") }
        let certPath = cert ?? file.cert, keyPath = key ?? file.key
        let bearer = token ?? file.token
        guard certPath != nil || bearer != nil else { throw ConfigError("--cert and --key (or --token) are required") }
        guard let agentText = agentID ?? file.agentID else { throw ConfigError("--agent-id is required") }
        let agent: Identifier
        do { agent = try Identifier(validating: agentText) } catch { throw ConfigError("--agent-id: \(error.message)") }

        let specTexts = sources.isEmpty ? (file.sources ?? []) : sources
        guard !specTexts.isEmpty else { throw ConfigError("at least one --source is required; \(SourceSpec.usage)") }
        var specs: [SourceSpec] = []
        for text in specTexts {
            do { specs.append(try SourceSpec.parse(text)) } catch { throw ConfigError(error.description) }
        }
        let names = specs.map(\.name)
        if let dup = names.first(where: { n in names.filter { $0 == n }.count > 1 }) {
            throw ConfigError("source name \"\(dup)\" is used twice")
        }
        guard specs.count <= 16 else { throw ConfigError("at most 16 sources (protocol limit of tracks per session)") }

        let tls: TLSConfiguration
        do {
            // One configuration serves every address (the name to verify goes to each
            // connection's handler); building one for each other host checks it as a TLS name.
            for address in addresses.dropFirst() {
                _ = try TLSConfigurations.client(caPEMPath: caPath, certificatePEMPath: certPath, privateKeyPEMPath: keyPath,
                                                 serverHostname: address.host)
            }
            tls = try TLSConfigurations.client(caPEMPath: caPath, certificatePEMPath: certPath, privateKeyPEMPath: keyPath,
                                               serverHostname: addresses[0].host)
        } catch {
            throw ConfigError("TLS: \(error)")
        }
        // An agent certificate outside its validity can never connect: say so with its dates now,
        // not as a bare CERTIFICATE_EXPIRED from every handshake (issue 13, finding 7).
        let renew = "issue a new one with `recordctl ca issue agent \(agent)` and restart the agent"
        let validity = certPath.flatMap { CertificateValidity.read(pemFile: $0) }
        if let certPath, let validity, let problem = validity.problem(at: Date(), file: certPath, renew: renew) {
            throw ConfigError(problem)
        }

        let record = self.record || (file.record ?? false)
        let durationValue = duration ?? file.durationSeconds
        if let d = durationValue {
            guard d > 0 else { throw ConfigError("--duration must be positive") }
            guard record else { throw ConfigError("--duration applies to --record sessions only") }
        }
        var session: Identifier?
        if let text = sessionID ?? file.sessionID {
            do { session = try Identifier(validating: text) } catch { throw ConfigError("--session-id: \(error.message)") }
        }
        var labelSet: [Label] = []
        var pairs: [(String, String)] = (file.labels ?? [:]).sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        for text in labels {
            guard let eq = text.firstIndex(of: "=") else { throw ConfigError("--label \"\(text)\" is not KEY=VALUE") }
            let k = String(text[..<eq]), v = String(text[text.index(after: eq)...])
            pairs.removeAll { $0.0 == k }
            pairs.append((k, v))
        }
        for (k, v) in pairs {
            do { labelSet.append(Label(try Identifier(validating: k), v)) } catch { throw ConfigError("label key \"\(k)\": \(error.message)") }
        }

        var video = VideoEncodingSettings()
        if let v = preset ?? file.video?.preset { video.preset = v }
        if let t = tune ?? file.video?.tune { video.tune = t == "none" ? nil : t }
        if let c = crf ?? file.video?.crf { video.crf = c }
        video.bitrateKbps = bitrateKbps ?? file.video?.bitrateKbps
        video.keyframeInterval = keyframeInterval ?? file.video?.keyframeInterval
        if let t = threads ?? file.video?.threads { video.threads = t }
        video.profile = profile ?? file.video?.profile
        var audio = AudioEncodingSettings()
        audio.bitrate = opusBitrate ?? file.audio?.bitrate
        if let a = opusApplication ?? file.audio?.application { audio.application = a }
        guard audio.opusApplication != nil else { throw ConfigError("--opus-application must be audio, voip or lowdelay") }
        audio.complexity = opusComplexity ?? file.audio?.complexity
        if let c = audio.complexity, !(0...10).contains(c) { throw ConfigError("--opus-complexity must be 0…10, got \(c)") }

        var limits = ResendBuffer.Limits()
        if let mb = bufferMegabytes ?? file.buffer?.maxMegabytes {
            guard mb > 0 else { throw ConfigError("--buffer-mb must be positive") }
            limits.maxBytes = mb * 1024 * 1024
        }
        if let s = bufferSeconds ?? file.buffer?.maxSeconds {
            guard s > 0 else { throw ConfigError("--buffer-seconds must be positive") }
            limits.maxDuration = Int64(s * 1e9)
        }
        let initial = Int64(reconnectInitial ?? file.reconnect?.initialMillis ?? 250) * 1_000_000
        let maximum = Int64(reconnectMax ?? file.reconnect?.maxMillis ?? 10_000) * 1_000_000
        guard initial > 0, maximum >= initial else { throw ConfigError("reconnect delays must be positive with max ≥ initial") }

        let stopSeconds = stopTimeout ?? file.stopTimeoutSeconds ?? 30
        guard stopSeconds > 0, stopSeconds <= 3600 else { throw ConfigError("--stop-timeout must be between 0 and 3600 seconds") }

        let levelText = logLevel ?? file.logLevel ?? "info"
        guard let level = Logger.Level(rawValue: levelText) else { throw ConfigError("--log-level \"\(levelText)\" is not a swift-log level") }

        var settings = AgentSettings(
            host: addresses[0].host, port: addresses[0].port, tls: tls, tlsHostname: addresses[0].tlsHostname,
            agentID: agent, bearerToken: bearer, sources: specs, video: video, audio: audio, bufferLimits: limits,
            backoff: ReconnectBackoff(initial: initial, maximum: maximum), record: record, sessionID: session,
            duration: durationValue, labels: labelSet, fastFiles: fastFiles || (file.fastFiles ?? false),
            stopTimeout: Int64(stopSeconds * 1e9))
        settings.servers = addresses
        settings.certificateExpiry = validity?.notAfter
        settings.testSourcesOnWholeSeconds = testSourcesOnWholeSeconds
        if clockOffset != nil || clockDriftPPM != nil {
            let offset = clockOffset ?? 0
            let drift = clockDriftPPM ?? 0
            guard offset.isFinite, abs(offset) <= 864_000 else { throw ConfigError("--clock-offset must be within ±864000 s (10 days), got \(offset)") }
            guard drift.isFinite, abs(drift) <= 1000 else { throw ConfigError("--clock-drift-ppm must be within ±1000, got \(drift)") }
            let skew = (offset: Int64(offset * 1e9), driftPPM: drift)
            guard SkewedClock(offset: skew.offset, driftPPM: drift).now() > 0 else {
                throw ConfigError("--clock-offset \(offset) puts the clock before 0 (sample times must not be negative); use a larger offset")
            }
            settings.clockSkew = skew
        }
        if let certPath, let warning = validity?.renewalWarning(at: Date(), file: certPath, renew: renew) {
            settings.startupWarnings.append(warning)
        }
        return (settings, level)
    }

    /// The servers, from `--server` (every one given), else the file's `server` or `servers`;
    /// each host is its own TLS name.
    func serverAddresses(_ file: AgentConfigFile) throws(ConfigError) -> [ServerAddress] {
        let parsed: [(host: String, port: Int)]
        switch (server.isEmpty, file.server, file.servers) {
        case (false, _, _): parsed = try parseServerAddresses(server, origin: "--server")
        case (true, _?, _?): throw ConfigError("the config gives both \"server\" and \"servers\"; keep one (\"servers\" for a list)")
        case (true, let text?, nil): parsed = try parseServerAddresses([text], origin: "config \"server\"")
        case (true, nil, let list?): parsed = try parseServerAddresses(list, origin: "config \"servers\"")
        case (true, nil, nil): throw ConfigError("--server HOST:PORT is required (or \"server\" / \"servers\" in the config)")
        }
        return parsed.map { ServerAddress(host: $0.host, port: $0.port, tlsHostname: TLSConfigurations.handlerHostname(for: $0.host)) }
    }
}

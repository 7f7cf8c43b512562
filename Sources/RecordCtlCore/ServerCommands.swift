import AdminModels
import ArgumentParser
import Foundation
import NIOConcurrencyHelpers

/// Table cells for the API's values: "-" for nothing, dates as the API writes them.
enum Cell {
    static func text(_ value: String?) -> String { value ?? "-" }
    static func date(_ value: Date?) -> String { value.map(AdminDates.format) ?? "-" }
    static func bytes(_ value: Int64) -> String { Formatting.bytes(UInt64(max(0, value))) }
    static func labels(_ labels: [String: String]) -> String {
        labels.isEmpty ? "-" : labels.keys.sorted().map { "\($0)=\(labels[$0] ?? "")" }.joined(separator: ",")
    }
}

/// `recordctl servers`
struct ServersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "servers", abstract: "List the record-servers that share the catalog (the fleet), with their load.")
    @OptionGroup var connection: ConnectionOptions
    @Flag(help: "Print the server's JSON instead of a table.") var json = false

    func run() throws {
        let list = try connection.client().send(.GET, "/v1/servers").decode(ServerListResponse.self)
        if json { print(JSONOutput.pretty(list)); return }
        let rows = list.servers.map { s in
            [s.id + (s.id == list.this ? " *" : ""), s.alive ? "up" : "DOWN", s.ingestAddress, s.softwareVersion, Cell.date(s.startedAt),
             Cell.date(s.heartbeatAt), String(s.liveSessions), String(s.connectedAgents)]
        }
        print(Formatting.table(["ID", "STATE", "INGEST", "VERSION", "STARTED", "LAST HEARTBEAT", "SESSIONS", "AGENTS"], rows))
        print("* answered this request; DOWN: no heartbeat for \(Int(FleetServer.silenceBeforeDown)) s")
    }
}

/// `recordctl agents`
struct AgentsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "agents", abstract: "List the capture agents connected to record-server now, and those seen before.")
    @OptionGroup var connection: ConnectionOptions
    @Flag(help: "Print the server's JSON instead of a table.") var json = false

    func run() throws {
        let list = try connection.client().send(.GET, "/v1/agents").decode(AgentListResponse.self)
        if json { print(JSONOutput.pretty(list)); return }
        let agents = list.agents
        defer { Self.printOffline(list.offlineAgents) }
        if agents.isEmpty { print("no agents connected"); return }
        let rows = agents.map { a in
            [a.id, a.address, a.softwareVersion, Cell.date(a.connectedAt), Cell.date(a.lastSeen), Cell.text(a.sessionID),
             a.roundTripMillis.map { String(format: "%.1f ms", $0) } ?? "-", Self.offset(a.clock), Self.drift(a.clock),
             a.captureFailure == nil ? "ok" : "failed"]
        }
        print(Formatting.table(["ID", "ADDRESS", "VERSION", "CONNECTED", "LAST SEEN", "SESSION", "RTT", "CLOCK OFFSET", "DRIFT", "CAPTURE"], rows))
        // The reason, in full, below the table: it names the source, its device and the cause.
        for a in agents {
            guard let failure = a.captureFailure else { continue }
            print("\n\(a.id): capture failed at \(Cell.date(failure.at)): \(failure.message)")
        }
    }

    /// The agent's clock minus the server's, in seconds to the millisecond, with its one-sigma
    /// uncertainty and, after "|", half the smallest round trip (the asymmetry it cannot see).
    static func offset(_ clock: AgentClock?) -> String {
        guard let clock else { return "-" }
        return String(format: "%+.3f s ±%.1f ms |%.1f ms", clock.offsetMillis / 1000, clock.uncertaintyMillis, clock.asymmetryBoundMillis)
    }

    static func drift(_ clock: AgentClock?) -> String {
        guard let clock else { return "-" }
        return String(format: "%+.1f ppm", clock.driftPPM)
    }

    /// Agents the server has seen that are not connected now, below the connected ones.
    static func printOffline(_ offline: [OfflineAgent]) {
        guard !offline.isEmpty else { return }
        print("\nnot connected now:")
        print(Formatting.table(["ID", "LAST ADDRESS", "VERSION", "FIRST SEEN", "LAST SEEN"],
                               offline.map { [$0.id, $0.lastAddress, $0.softwareVersion, Cell.date($0.firstSeen), Cell.date($0.lastSeen)] }))
    }
}

/// `recordctl sessions`
struct SessionsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sessions", abstract: "List the live sessions (recording, detached or finalizing) with their tracks.")
    @OptionGroup var connection: ConnectionOptions
    @Flag(help: "Print the server's JSON instead of a table.") var json = false

    func run() throws {
        let list = try connection.client().send(.GET, "/v1/sessions").decode(SessionListResponse.self)
        if json { print(JSONOutput.pretty(list)); return }
        print(SessionsView.render(list))
    }
}

/// Tables of live sessions, shared by `sessions` and `top`.
enum SessionsView {
    static func render(_ list: SessionListResponse) -> String {
        let sessions = list.sessions
        if sessions.isEmpty { return "no live sessions" }
        let sessionRows = sessions.map { s in
            [s.id, s.agentID, s.state, Cell.date(s.startedAt), String(s.tracks.count), String(s.lastAck), Cell.labels(s.labels)]
        }
        var out = Formatting.table(["SESSION", "AGENT", "STATE", "STARTED", "TRACKS", "ACK", "LABELS"], sessionRows)
        var trackRows: [[String]] = []
        for s in sessions {
            for t in s.tracks {
                trackRows.append([
                    s.id, String(t.trackID), t.label, t.kind, t.codec, t.status.rawValue, String(format: "%.1f", t.fps),
                    Formatting.rate(t.bitrate), String(format: "%.3f s", t.lagSeconds), String(t.dropped), String(t.samples),
                    Cell.bytes(t.bytes),
                ])
            }
        }
        if !trackRows.isEmpty {
            out += "\n\n" + Formatting.table(["SESSION", "TRACK", "LABEL", "KIND", "CODEC", "STATUS", "FPS", "BITRATE",
                                              "LAG", "DROPPED", "SAMPLES", "BYTES"], trackRows)
        }
        // Why a track failed, in full, below the table.
        for s in sessions {
            for t in s.tracks {
                guard let error = t.error else { continue }
                out += "\n\(s.id) track \(t.trackID) (\(t.label)) failed: \(error)"
            }
        }
        return out
    }
}

/// `recordctl top`
struct TopCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "top",
        abstract: "A live, refreshing view of sessions with per-track fps, bitrate, lag, dropped samples and ack position.")
    @OptionGroup var connection: ConnectionOptions
    @Option(help: ArgumentHelp("Seconds between refreshes.", valueName: "seconds")) var interval: Double = 1
    @Flag(help: "Print one frame and exit (for scripts).") var once = false
    @Option(help: ArgumentHelp("Exit after this many frames (default: until interrupted).", valueName: "n")) var count: Int?

    func validate() throws {
        guard interval >= 0.1 else { throw ValidationError("--interval must be at least 0.1 seconds") }
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
    }

    func run() throws {
        let client = try connection.client()
        let tty = isatty(STDOUT_FILENO) != 0
        let frames = once ? 1 : count
        var shown = 0
        while true {
            let now = ISO8601DateFormatter().string(from: Date())
            var frame = "record-server \(client.baseURL.absoluteString) — \(now)\n\n"
            var failure: CLIFailure?
            do {
                frame += SessionsView.render(try client.send(.GET, "/v1/sessions").decode(SessionListResponse.self))
            } catch let error as CLIFailure where error.code == .unreachable && !once && !error.message.contains("token") {
                // A server restarting or a network blip: keep watching, say so, try again.
                frame += "cannot reach the server: \(error.message)\nretrying every \(Formatting.seconds(interval))…\n"
                failure = error
            }
            if tty && !once { frame = "\u{1B}[H\u{1B}[2J" + frame }
            print(frame)
            fflush(nil)
            shown += 1
            if let frames, shown >= frames {
                if let failure { throw failure }
                return
            }
            if !tty { print("") }
            Thread.sleep(forTimeInterval: interval)
        }
    }
}

/// `recordctl recordings`
struct RecordingsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recordings", abstract: "List recording files from the server's catalog, filtered by agent, label, creation time and status.")
    @OptionGroup var connection: ConnectionOptions
    @Option(help: ArgumentHelp("Only this agent's recordings.", valueName: "id")) var agent: String?
    @Option(help: ArgumentHelp("Created at or after this ISO-8601 date-time (e.g. 2024-05-01T10:00:00Z).", valueName: "date")) var since: String?
    @Option(help: ArgumentHelp("Created at or before this ISO-8601 date-time.", valueName: "date")) var until: String?
    @Option(help: ArgumentHelp("Only this status: recording, completed, interrupted, recovered, failed, cancelled.", valueName: "status"))
    var status: String?
    @Option(help: ArgumentHelp("Only files of sessions with this label: key, or key=value (e.g. room=studio-2).", valueName: "label"))
    var label: String?
    @Option(help: ArgumentHelp("At most this many rows (1…10000; server default 1000).", valueName: "n")) var limit: Int?
    @Flag(help: "Print the server's JSON instead of a table.") var json = false

    static let statuses = RecordingStatus.allCases.map(\.rawValue)

    func validate() throws {
        if let status, !Self.statuses.contains(status) {
            throw ValidationError("invalid --status \"\(status)\"; expected one of \(Self.statuses.joined(separator: ", "))")
        }
        if let limit, !(1...10_000).contains(limit) { throw ValidationError("--limit must be from 1 to 10000") }
        for (name, value) in [("since", since), ("until", until)] {
            if let value, Self.parseDate(value) == nil {
                throw ValidationError("invalid --\(name) \"\(value)\"; expected an ISO-8601 date-time such as 2024-05-01T10:00:00Z")
            }
        }
    }

    /// What the server accepts (RFC 3339, offsets up to ±23:59), so neither refuses what the other takes.
    static func parseDate(_ text: String) -> Date? { AdminDates.parse(text) }

    var query: [(String, String)] {
        var query: [(String, String)] = []
        if let agent { query.append(("agent", agent)) }
        if let status { query.append(("status", status)) }
        if let since { query.append(("since", since)) }
        if let until { query.append(("until", until)) }
        if let label { query.append(("label", label)) }
        if let limit { query.append(("limit", String(limit))) }
        return query
    }

    func run() throws {
        let list = try connection.client().send(.GET, "/v1/recordings", query: query).decode(RecordingListResponse.self)
        if json { print(JSONOutput.pretty(list)); return }
        let recordings = list.recordings
        if recordings.isEmpty { print("no recordings"); return }
        print(Formatting.table(["ID", "AGENT", "STATUS", "CREATED", "DURATION", "SIZE", "PATH"], recordings.map(Self.row)))
        if recordings.count >= list.limit {
            print("(\(recordings.count) rows: the limit; there may be more, use --limit or narrow with --since/--until)")
        }
    }

    static func row(_ r: RecordingFile) -> [String] {
        [r.id, r.agentID, r.status.rawValue, Cell.date(r.createdAt), Formatting.seconds(r.durationSeconds), Cell.bytes(r.sizeBytes),
         r.path]
    }
}

/// `recordctl recording ID`
struct RecordingCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recording", abstract: "Show one recording from the catalog with its session's tracks.")
    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The recording id (<session id>-<segment index>).") var id: String
    @Flag(help: "Print the server's JSON instead of text.") var json = false

    func run() throws {
        let detail = try connection.client().send(.GET, "/v1/recordings/" + AdminClient.segment(id))
            .decode(RecordingDetailResponse.self)
        if json { print(JSONOutput.pretty(detail)); return }
        let r = detail.recording
        var out = ""
        for (name, value) in [("id", r.id), ("session", r.sessionID), ("agent", r.agentID), ("segment", String(r.segmentIndex)),
                              ("status", r.status.rawValue), ("path", r.path), ("created", Cell.date(r.createdAt)),
                              ("finished", Cell.date(r.finishedAt)), ("error", Cell.text(r.error))] {
            out += name.padding(toLength: 10, withPad: " ", startingAt: 0) + value + "\n"
        }
        out += "size      " + Cell.bytes(r.sizeBytes) + "\n"
        out += "duration  " + Formatting.seconds(r.durationSeconds) + "\n"
        out += "start     " + Formatting.seconds(r.startSeconds) + "\n\n"
        let rows = detail.tracks.map { t in
            [String(t.trackID), t.label, t.kind, t.codec, t.width > 0 ? "\(t.width)x\(t.height)" : "-", t.status.rawValue,
             String(t.samples), Cell.bytes(t.bytes), String(t.dropped), Cell.text(t.error)]
        }
        out += Formatting.table(["TRACK", "LABEL", "KIND", "CODEC", "SIZE", "STATUS", "SAMPLES", "BYTES", "DROPPED", "ERROR"], rows)
        print(out)
    }
}

/// `recordctl delete ID`
struct DeleteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete a recording: its file on the server and its catalog row.")
    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The recording id (<session id>-<segment index>).") var id: String
    @Flag(help: "Print JSON instead of text.") var json = false

    func run() throws {
        _ = try connection.client().send(.DELETE, "/v1/recordings/" + AdminClient.segment(id))
        print(json ? JSONOutput.pretty(Deleted(deleted: id)) : "deleted recording \(id)")
    }

    /// recordctl's own answer (the server's is an empty 204).
    struct Deleted: Encodable {
        var deleted: String
        var status = "deleted"
    }
}

/// `recordctl download ID [--output FILE] [--force]`
struct DownloadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "download",
        abstract: "Download a finished recording's file from the server (byte for byte, over the admin API).")
    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The recording id (<session id>-<segment index>).") var id: String
    @Option(name: [.short, .long], help: ArgumentHelp("Where to save it (default: ./<id>.mp4).", valueName: "file")) var output: String?
    @Flag(help: "Replace the file if it exists.") var force = false
    @Flag(help: "Print JSON instead of text.") var json = false

    func run() throws {
        let target = output ?? "./\(id).mp4"
        if !force, FileManager.default.fileExists(atPath: target) {
            throw CLIFailure(.usage, "\(target) exists; choose another --output or add --force")
        }
        let bytes = try connection.client().download("/v1/recordings/" + AdminClient.segment(id) + "/file", to: target).bytes
        print(json ? JSONOutput.pretty(Downloaded(id: id, path: target, bytes: bytes))
                   : "downloaded recording \(id) (\(Cell.bytes(Int64(bytes)))) to \(target)")
    }

    struct Downloaded: Encodable {
        var id: String
        var path: String
        var bytes: Int
    }
}

/// `recordctl export SESSION [--from T] [--to T] [--track LABEL]... [--output FILE]`
struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Save a time range of a session, across its segments, as one MP4 (no re-encoding).",
        discussion: """
            Times are seconds from the session's start (12.5) or date-times (2026-05-01T10:00:03Z). \
            The file starts with the picture on screen at --from and ends within one frame of --to; \
            without them it holds the whole session. A running session exports what is durable so far.
            """)
    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The session id.") var session: String
    @Option(help: ArgumentHelp("Start: session seconds or a date-time (default: the session's start).", valueName: "time")) var from: String?
    @Option(help: ArgumentHelp("End: session seconds or a date-time (default: the end of what is recorded).", valueName: "time")) var to: String?
    @Option(name: .customLong("track"), help: ArgumentHelp("A track to keep, by label; repeat for more (default: every track).", valueName: "label"))
    var tracks: [String] = []
    @Option(name: [.short, .long], help: ArgumentHelp("Where to save it (default: ./<session>-export.mp4).", valueName: "file")) var output: String?
    @Flag(help: "Replace the file if it exists.") var force = false
    @Flag(help: "Print JSON instead of text.") var json = false

    func run() throws {
        let target = output ?? "./\(session)-export.mp4"
        if !force, FileManager.default.fileExists(atPath: target) {
            throw CLIFailure(.usage, "\(target) exists; choose another --output or add --force")
        }
        var query: [(String, String)] = []
        if let from { query.append(("from", from)) }
        if let to { query.append(("to", to)) }
        if !tracks.isEmpty { query.append(("tracks", tracks.joined(separator: ","))) }
        let (bytes, headers) = try connection.client().download("/v1/sessions/" + AdminClient.segment(session) + "/export", query: query, to: target)
        let result = Exported(session: session, path: target, bytes: bytes, from: headers.first(name: "X-Export-From").flatMap(Double.init),
                              to: headers.first(name: "X-Export-To").flatMap(Double.init),
                              tracks: headers.first(name: "X-Export-Tracks")?.split(separator: ",").map(String.init) ?? [])
        print(json ? JSONOutput.pretty(result)
                   : "exported \(result.tracks.joined(separator: ", ")) of session \(session) from \(result.from.map { String(format: "%.3f", $0) } ?? "?") s "
                     + "to \(result.to.map { String(format: "%.3f", $0) } ?? "?") s (\(Cell.bytes(Int64(bytes)))) to \(target)")
    }

    struct Exported: Encodable {
        var session: String
        var path: String
        var bytes: Int
        var from: Double?
        var to: Double?
        var tracks: [String]
    }
}

/// `recordctl events [--count N] [--json]`
struct EventsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events", abstract: "Print agent and session events as they happen (the server's event stream).")
    @OptionGroup var connection: ConnectionOptions
    @Option(help: ArgumentHelp("Stop after this many events (default: until interrupted).", valueName: "n")) var count: Int?
    @Flag(help: "Print each event's JSON, one per line.") var json = false

    func validate() throws {
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
    }

    func run() throws {
        let json = self.json, limit = count
        let seen = NIOLockedValueBox(0)
        let client = try connection.client()
        let server = client.baseURL.absoluteString
        try client.streamLines("/v1/events") { line in
            if line.hasPrefix(": record-server events") {
                // On stderr, so that stdout holds events only: a script knows it is subscribed.
                FileHandle.standardError.write(Data("recordctl: following the events of \(server)\n".utf8))
            }
            guard line.hasPrefix("data: ") else { return true }
            let data = Data(line.dropFirst(6).utf8)
            if json {
                print(line.dropFirst(6))
            // An event this recordctl cannot decode (a newer server's) is printed as sent, below.
            } else if let event = try? AdminJSON.decoder().decode(ServerEvent.self, from: data) {
                print([AdminDates.format(event.at), event.type.rawValue, event.agentID, event.sessionID ?? "", event.recordingID ?? "",
                       event.status ?? "", event.message ?? ""]
                    .filter { !$0.isEmpty }.joined(separator: "  "))
            } else {
                // A newer server's event this recordctl does not know: shown as the server sent it.
                print(line.dropFirst(6))
            }
            fflush(nil)  // each event as it comes, also into a pipe
            let n = seen.withLockedValue { $0 += 1; return $0 }
            return limit.map { n < $0 } ?? true
        }
    }
}

/// `recordctl start --agent ID [--agent ID]... [--label k=v]...`
struct StartCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "start", abstract: "Ask a connected agent to start a recording session; several --agent start one session across them.")
    @OptionGroup var connection: ConnectionOptions
    @Option(name: .customLong("agent"), help: ArgumentHelp(
        "The connected agent to start. Repeat it for one session across several agents (their tracks in one file, in this order).",
        valueName: "id"))
    var agents: [String] = []
    @Option(name: .customLong("label"), help: ArgumentHelp("A session label key=value (repeatable).", valueName: "key=value"))
    var labels: [String] = []
    @Option(help: ArgumentHelp("Wait up to this many seconds for the session to appear and print its id (0: do not wait).",
                               valueName: "seconds"))
    var wait: Double = 0
    @Flag(help: "Print JSON instead of text.") var json = false

    func parsedLabels() throws -> [String: String] {
        var result: [String: String] = [:]
        for label in labels {
            guard let eq = label.firstIndex(of: "="), eq != label.startIndex else {
                throw ValidationError("invalid --label \"\(label)\"; expected key=value")
            }
            let key = String(label[..<eq])
            guard result[key] == nil else { throw ValidationError("--label \(key) given more than once") }
            result[key] = String(label[label.index(after: eq)...])
        }
        return result
    }

    func validate() throws {
        _ = try parsedLabels()
        guard !agents.isEmpty else { throw ValidationError("--agent is required") }
        guard Set(agents).count == agents.count else { throw ValidationError("an agent is named twice in --agent") }
        guard wait >= 0 else { throw ValidationError("--wait must not be negative") }
    }

    func run() throws {
        let client = try connection.client()
        guard agents.count == 1 else {
            // The server answers once every agent has opened its part, or with why not.
            let answer = try client.send(.POST, "/v1/sessions", body: StartSessionRequest(agents: agents, labels: try parsedLabels()))
                .decode(ControlResponse.self)
            print(json ? JSONOutput.pretty(answer) : "started session \(answer.sessionID ?? "?") across agents \(agents.joined(separator: ", "))")
            return
        }
        let agent = agents[0]
        let before = wait > 0 ? Set(try Self.sessionIDs(client, agent: agent)) : []
        var answer = try client.send(.POST, "/v1/sessions", body: StartSessionRequest(agent: agent, labels: try parsedLabels()))
            .decode(ControlResponse.self)
        // The server answers with the new session's id once the agent opened it (201).
        if wait > 0, answer.sessionID == nil {
            let deadline = Date().addingTimeInterval(wait)
            while answer.sessionID == nil {
                answer.sessionID = try Self.sessionIDs(client, agent: agent).first { !before.contains($0) }
                if answer.sessionID != nil { break }
                guard Date() < deadline else {
                    throw CLIFailure(.failed, "agent \(agent) accepted the start but no session appeared within \(Formatting.seconds(wait))")
                }
                Thread.sleep(forTimeInterval: 0.1)
            }
        }
        if json {
            print(JSONOutput.pretty(answer))
        } else if let sessionID = answer.sessionID {
            print("started session \(sessionID) on agent \(agent)")
        } else {
            print("start requested on agent \(agent); the session appears in `recordctl sessions` once the agent opens it")
        }
    }

    static func sessionIDs(_ client: AdminClient, agent: String) throws -> [String] {
        try client.send(.GET, "/v1/sessions").decode(SessionListResponse.self).sessions.filter { $0.agentID == agent }.map(\.id)
    }
}

/// `recordctl stop SESSION` and `recordctl cancel SESSION`.
struct StopCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stop", abstract: "Stop a live session: the agent finishes it and the recording is finalized (completed).")
    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The live session id.") var session: String
    @Flag(help: "Print JSON instead of text.") var json = false

    func run() throws { try SessionAction.run("stop", session: session, connection: connection, json: json) }
}

struct CancelCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel", abstract: "Cancel a live session: the agent discards it and the server removes what was written.")
    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The live session id.") var session: String
    @Flag(help: "Print JSON instead of text.") var json = false

    func run() throws { try SessionAction.run("cancel", session: session, connection: connection, json: json) }
}

enum SessionAction {
    static func run(_ action: String, session: String, connection: ConnectionOptions, json: Bool) throws {
        let answer = try connection.client().send(.POST, "/v1/sessions/\(AdminClient.segment(session))/\(action)")
            .decode(ControlResponse.self)
        print(json ? JSONOutput.pretty(answer) : "\(action) requested for session \(session)")
    }
}

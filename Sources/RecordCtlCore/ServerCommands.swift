import ArgumentParser
import Foundation

/// Reading loosely typed JSON values for tables.
enum Field {
    static func string(_ object: [String: Any], _ key: String) -> String {
        switch object[key] {
        case let s as String: return s
        case let n as NSNumber: return n.stringValue
        case nil, is NSNull: return "-"
        case let other?: return "\(other)"
        }
    }
    static func double(_ object: [String: Any], _ key: String) -> Double? { (object[key] as? NSNumber)?.doubleValue }
    static func int(_ object: [String: Any], _ key: String) -> Int? { (object[key] as? NSNumber)?.intValue }
    static func objects(_ object: [String: Any], _ key: String) -> [[String: Any]] { object[key] as? [[String: Any]] ?? [] }
    static func labels(_ object: [String: Any]) -> String {
        guard let labels = object["labels"] as? [String: Any], !labels.isEmpty else { return "-" }
        return labels.keys.sorted().map { "\($0)=\(labels[$0].map { "\($0)" } ?? "")" }.joined(separator: ",")
    }
}

/// `recordctl agents`
struct AgentsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "agents", abstract: "List the capture agents connected to record-server now.")
    @OptionGroup var connection: ConnectionOptions
    @Flag(help: "Print the server's JSON instead of a table.") var json = false

    func run() throws {
        let response = try connection.client().send("GET", "/v1/agents")
        if json { print(JSONOutput.pretty(response.body)); return }
        let agents = Field.objects(try response.object(), "agents")
        if agents.isEmpty { print("no agents connected"); return }
        let rows = agents.map { a in
            [Field.string(a, "id"), Field.string(a, "address"), Field.string(a, "software_version"),
             Field.string(a, "connected_at"), Field.string(a, "last_seen"), Field.string(a, "session_id"),
             Field.double(a, "round_trip_millis").map { String(format: "%.1f ms", $0) } ?? "-",
             a["capture_failure"] is [String: Any] ? "failed" : "ok"]
        }
        print(Formatting.table(["ID", "ADDRESS", "VERSION", "CONNECTED", "LAST SEEN", "SESSION", "RTT", "CAPTURE"], rows))
        // The reason, in full, below the table: it names the source, its device and the cause.
        for a in agents {
            guard let failure = a["capture_failure"] as? [String: Any] else { continue }
            print("\n\(Field.string(a, "id")): capture failed at \(Field.string(failure, "at")): \(Field.string(failure, "message"))")
        }
    }
}

/// `recordctl sessions`
struct SessionsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sessions", abstract: "List the live sessions (recording, detached or finalizing) with their tracks.")
    @OptionGroup var connection: ConnectionOptions
    @Flag(help: "Print the server's JSON instead of a table.") var json = false

    func run() throws {
        let response = try connection.client().send("GET", "/v1/sessions")
        if json { print(JSONOutput.pretty(response.body)); return }
        print(SessionsView.render(try response.object()))
    }
}

/// Tables of live sessions, shared by `sessions` and `top`.
enum SessionsView {
    static func render(_ object: [String: Any]) -> String {
        let sessions = Field.objects(object, "sessions")
        if sessions.isEmpty { return "no live sessions" }
        let sessionRows = sessions.map { s in
            [Field.string(s, "id"), Field.string(s, "agent_id"), Field.string(s, "state"), Field.string(s, "started_at"),
             String(Field.objects(s, "tracks").count), Field.string(s, "last_ack"), Field.labels(s)]
        }
        var out = Formatting.table(["SESSION", "AGENT", "STATE", "STARTED", "TRACKS", "ACK", "LABELS"], sessionRows)
        var trackRows: [[String]] = []
        for s in sessions {
            for t in Field.objects(s, "tracks") {
                trackRows.append([
                    Field.string(s, "id"), Field.string(t, "track_id"), Field.string(t, "label"), Field.string(t, "kind"),
                    Field.string(t, "codec"), Field.string(t, "status"),
                    Field.double(t, "fps").map { String(format: "%.1f", $0) } ?? "-",
                    Field.double(t, "bitrate").map { Formatting.rate($0) } ?? "-",
                    Field.double(t, "lag_seconds").map { String(format: "%.3f s", $0) } ?? "-",
                    Field.string(t, "dropped"), Field.string(t, "samples"),
                    Field.int(t, "bytes").map { Formatting.bytes(UInt64(max(0, $0))) } ?? "-",
                ])
            }
        }
        if !trackRows.isEmpty {
            out += "\n\n" + Formatting.table(["SESSION", "TRACK", "LABEL", "KIND", "CODEC", "STATUS", "FPS", "BITRATE",
                                              "LAG", "DROPPED", "SAMPLES", "BYTES"], trackRows)
        }
        // Why a track failed, in full, below the table.
        for s in sessions {
            for t in Field.objects(s, "tracks") where t["error"] is String {
                out += "\n\(Field.string(s, "id")) track \(Field.string(t, "track_id")) (\(Field.string(t, "label"))) failed: \(Field.string(t, "error"))"
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
                frame += SessionsView.render(try client.send("GET", "/v1/sessions").object())
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
        commandName: "recordings", abstract: "List recording files from the server's catalog, filtered by agent, creation time and status.")
    @OptionGroup var connection: ConnectionOptions
    @Option(help: ArgumentHelp("Only this agent's recordings.", valueName: "id")) var agent: String?
    @Option(help: ArgumentHelp("Created at or after this ISO-8601 date-time (e.g. 2024-05-01T10:00:00Z).", valueName: "date")) var since: String?
    @Option(help: ArgumentHelp("Created at or before this ISO-8601 date-time.", valueName: "date")) var until: String?
    @Option(help: ArgumentHelp("Only this status: recording, completed, interrupted, recovered, failed, cancelled.", valueName: "status"))
    var status: String?
    @Option(help: ArgumentHelp("At most this many rows (1…10000; server default 1000).", valueName: "n")) var limit: Int?
    @Flag(help: "Print the server's JSON instead of a table.") var json = false

    static let statuses = ["recording", "completed", "interrupted", "recovered", "failed", "cancelled"]

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

    static func parseDate(_ text: String) -> Date? {
        let plain = ISO8601DateFormatter()
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return plain.date(from: text) ?? fractional.date(from: text)
    }

    var query: [(String, String)] {
        var query: [(String, String)] = []
        if let agent { query.append(("agent", agent)) }
        if let status { query.append(("status", status)) }
        if let since { query.append(("since", since)) }
        if let until { query.append(("until", until)) }
        if let limit { query.append(("limit", String(limit))) }
        return query
    }

    func run() throws {
        let response = try connection.client().send("GET", "/v1/recordings", query: query)
        if json { print(JSONOutput.pretty(response.body)); return }
        let object = try response.object()
        let recordings = Field.objects(object, "recordings")
        if recordings.isEmpty { print("no recordings"); return }
        print(Formatting.table(["ID", "AGENT", "STATUS", "CREATED", "DURATION", "SIZE", "PATH"], recordings.map(Self.row)))
        if let limit = Field.int(object, "limit"), recordings.count >= limit {
            print("(\(recordings.count) rows: the limit; there may be more, use --limit or narrow with --since/--until)")
        }
    }

    static func row(_ r: [String: Any]) -> [String] {
        [Field.string(r, "id"), Field.string(r, "agent_id"), Field.string(r, "status"), Field.string(r, "created_at"),
         Field.double(r, "duration_seconds").map(Formatting.seconds) ?? "-",
         Field.int(r, "size_bytes").map { Formatting.bytes(UInt64(max(0, $0))) } ?? "-", Field.string(r, "path")]
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
        let response = try connection.client().send("GET", "/v1/recordings/" + AdminClient.segment(id))
        if json { print(JSONOutput.pretty(response.body)); return }
        let object = try response.object()
        let r = object["recording"] as? [String: Any] ?? [:]
        var out = ""
        for (name, key) in [("id", "id"), ("session", "session_id"), ("agent", "agent_id"), ("segment", "segment_index"),
                            ("status", "status"), ("path", "path"), ("created", "created_at"), ("finished", "finished_at"),
                            ("error", "error")] {
            out += name.padding(toLength: 10, withPad: " ", startingAt: 0) + Field.string(r, key) + "\n"
        }
        out += "size      " + (Field.int(r, "size_bytes").map { Formatting.bytes(UInt64(max(0, $0))) } ?? "-") + "\n"
        out += "duration  " + (Field.double(r, "duration_seconds").map(Formatting.seconds) ?? "-") + "\n"
        out += "start     " + (Field.double(r, "start_seconds").map(Formatting.seconds) ?? "-") + "\n\n"
        let rows = Field.objects(object, "tracks").map { t in
            [Field.string(t, "track_id"), Field.string(t, "label"), Field.string(t, "kind"), Field.string(t, "codec"),
             (Field.int(t, "width") ?? 0) > 0 ? "\(Field.string(t, "width"))x\(Field.string(t, "height"))" : "-",
             Field.string(t, "status"), Field.string(t, "samples"),
             Field.int(t, "bytes").map { Formatting.bytes(UInt64(max(0, $0))) } ?? "-", Field.string(t, "dropped"),
             Field.string(t, "error")]
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
        _ = try connection.client().send("DELETE", "/v1/recordings/" + AdminClient.segment(id))
        print(json ? JSONOutput.pretty(["deleted": id, "status": "deleted"]) : "deleted recording \(id)")
    }
}

/// `recordctl start --agent ID [--label k=v]...`
struct StartCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "start", abstract: "Ask a connected agent to start a recording session.")
    @OptionGroup var connection: ConnectionOptions
    @Option(help: ArgumentHelp("The connected agent to start.", valueName: "id")) var agent: String
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
        guard wait >= 0 else { throw ValidationError("--wait must not be negative") }
    }

    func run() throws {
        let client = try connection.client()
        let before = wait > 0 ? Set(try Self.sessionIDs(client, agent: agent)) : []
        let response = try client.send("POST", "/v1/sessions", body: ["agent": agent, "labels": try parsedLabels()])
        // The server answers with the new session's id once the agent opened it (201).
        var sessionID = (try? response.object())?["session_id"] as? String
        if wait > 0, sessionID == nil {
            let deadline = Date().addingTimeInterval(wait)
            while sessionID == nil {
                sessionID = try Self.sessionIDs(client, agent: agent).first { !before.contains($0) }
                if sessionID != nil { break }
                guard Date() < deadline else {
                    throw CLIFailure(.failed, "agent \(agent) accepted the start but no session appeared within \(Formatting.seconds(wait))")
                }
                Thread.sleep(forTimeInterval: 0.1)
            }
        }
        if json {
            var object = (try? response.object()) ?? [:]
            if let sessionID { object["session_id"] = sessionID }
            print(JSONOutput.pretty(object))
        } else if let sessionID {
            print("started session \(sessionID) on agent \(agent)")
        } else {
            print("start requested on agent \(agent); the session appears in `recordctl sessions` once the agent opens it")
        }
    }

    static func sessionIDs(_ client: AdminClient, agent: String) throws -> [String] {
        let sessions = Field.objects(try client.send("GET", "/v1/sessions").object(), "sessions")
        return sessions.filter { Field.string($0, "agent_id") == agent }.map { Field.string($0, "id") }
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
        let response = try connection.client().send("POST", "/v1/sessions/\(AdminClient.segment(session))/\(action)")
        print(json ? JSONOutput.pretty(response.body) : "\(action) requested for session \(session)")
    }
}

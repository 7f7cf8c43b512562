import Foundation
import Shared

/// The JSON configuration file of `capture-agent run --config FILE`
/// (`deploy/capture-agent.example.json`). Every field is optional; a flag given on the
/// command line wins over the file.
struct AgentConfigFile: Codable, Sendable, Equatable {
    struct Video: Codable, Sendable, Equatable {
        var preset: String?
        /// "none" for no tune.
        var tune: String?
        var crf: Double?
        var bitrateKbps: Int?
        var keyframeInterval: Int?
        var threads: Int?
        var profile: String?
        enum CodingKeys: String, CodingKey, CaseIterable {
            case preset, tune, crf, bitrateKbps, keyframeInterval, threads, profile
        }
    }

    struct Audio: Codable, Sendable, Equatable {
        var bitrate: Int?
        var application: String?
        /// Opus complexity 0…10.
        var complexity: Int?
        enum CodingKeys: String, CodingKey, CaseIterable { case bitrate, application, complexity }
    }

    struct Buffer: Codable, Sendable, Equatable {
        var maxMegabytes: Int?
        var maxSeconds: Double?
        enum CodingKeys: String, CodingKey, CaseIterable { case maxMegabytes, maxSeconds }
    }

    struct Reconnect: Codable, Sendable, Equatable {
        var initialMillis: Int?
        var maxMillis: Int?
        enum CodingKeys: String, CodingKey, CaseIterable { case initialMillis, maxMillis }
    }

    /// `HOST:PORT`, or several separated by commas (failover, as `servers`).
    var server: String?
    /// The fleet's servers, tried in turn; instead of `server`.
    var servers: [String]?
    var ca: String?
    var cert: String?
    var key: String?
    var token: String?
    var agentID: String?
    var sources: [String]?
    var record: Bool?
    var sessionID: String?
    var durationSeconds: Double?
    var labels: [String: String]?
    var video: Video?
    var audio: Audio?
    var buffer: Buffer?
    var reconnect: Reconnect?
    var fastFiles: Bool?
    var stopTimeoutSeconds: Double?
    var logLevel: String?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case server, servers, ca, cert, key, token, agentID, sources, record, sessionID, durationSeconds, labels
        case video, audio, buffer, reconnect, fastFiles, stopTimeoutSeconds, logLevel
    }

    /// Every key the file may hold, nested objects included (`labels` holds free-form keys).
    static let schema = StrictDecoding.Schema(CodingKeys.self, nested: [
        "video": .init(Video.CodingKeys.self), "audio": .init(Audio.CodingKeys.self),
        "buffer": .init(Buffer.CodingKeys.self), "reconnect": .init(Reconnect.CodingKeys.self),
    ])

    init() {}

    /// Reads and decodes `path`; the error names the file and what is wrong.
    static func load(path: String) throws(ConfigError) -> AgentConfigFile {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigError("cannot read config file \(path)")
        }
        // A misspelt key would otherwise be ignored and its default used without a word.
        // (Not JSON at all: the decoder below says so, with the position.)
        if let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any],
           let unknown = StrictDecoding.unknownKeys(inJSON: object, schema: schema) {
            throw ConfigError("\(path): \(unknown.message)")
        }
        do {
            return try JSONDecoder().decode(AgentConfigFile.self, from: data)
        } catch let DecodingError.keyNotFound(key, _) {
            throw ConfigError("\(path): missing \(key.stringValue)")
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            let where_ = context.codingPath.map(\.stringValue).joined(separator: ".")
            throw ConfigError("\(path): \(where_): \(context.debugDescription)")
        } catch let DecodingError.dataCorrupted(context) {
            throw ConfigError("\(path): not valid JSON: \(context.debugDescription)")
        } catch {
            throw ConfigError("\(path): \(error)")
        }
    }
}

/// A configuration problem, worded for the operator.
struct ConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    var message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}

/// Every address of `--server` (repeatable) or of the file's `server` / `servers`, in order:
/// each text is one address or several separated by commas. `origin` names where they come
/// from in messages. Empty entries and an address given twice are refused (a doubled one
/// would be tried twice as often in the rotation, which nobody means).
func parseServerAddresses(_ texts: [String], origin: String) throws(ConfigError) -> [(host: String, port: Int)] {
    var addresses: [(host: String, port: Int)] = []
    for text in texts {
        let entries = text.split(separator: ",", omittingEmptySubsequences: false)
        for (index, entry) in entries.enumerated() {
            let trimmed = entry.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty else {
                throw ConfigError("\(origin) \"\(text)\": entry \(index + 1) is empty; write HOST:PORT,HOST:PORT,…")
            }
            let address = try parseServerAddress(trimmed)
            if addresses.contains(where: { $0 == address }) {
                throw ConfigError("\(origin): \(trimmed) is listed twice")
            }
            addresses.append(address)
        }
    }
    guard !addresses.isEmpty else { throw ConfigError("\(origin): no server address") }
    return addresses
}

/// `HOST:PORT`, `HOST` (port 7443), `[IPv6]:PORT`.
func parseServerAddress(_ text: String, defaultPort: Int = 7443) throws(ConfigError) -> (host: String, port: Int) {
    var host = text
    var port = defaultPort
    if text.hasPrefix("[") {
        guard let close = text.firstIndex(of: "]") else { throw ConfigError("server \"\(text)\": unclosed [") }
        host = String(text[text.index(after: text.startIndex)..<close])
        let rest = text[text.index(after: close)...]
        if rest.hasPrefix(":") {
            guard let p = Int(rest.dropFirst()) else { throw ConfigError("server \"\(text)\": bad port") }
            port = p
        } else if !rest.isEmpty {
            throw ConfigError("server \"\(text)\": expected [ADDRESS]:PORT")
        }
    } else if let colon = text.lastIndex(of: ":") {
        guard text.firstIndex(of: ":") == colon else {
            throw ConfigError("server \"\(text)\": write IPv6 addresses as [ADDRESS]:PORT")
        }
        host = String(text[..<colon])
        guard let p = Int(text[text.index(after: colon)...]) else { throw ConfigError("server \"\(text)\": bad port") }
        port = p
    }
    guard !host.isEmpty else { throw ConfigError("server \"\(text)\": empty host") }
    guard (1...65535).contains(port) else { throw ConfigError("server \"\(text)\": port \(port) is not 1…65535") }
    return (host, port)
}

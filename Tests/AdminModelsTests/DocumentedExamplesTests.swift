import AdminModels
import Foundation
import Testing

/// Every JSON example of docs/admin-api.md decodes into the shared models and encodes back to
/// the same JSON: field names, explicit nulls, left-out keys and the date format are what the
/// document promises, for the server (which encodes these types) and recordctl (which decodes
/// them) alike.
@Suite("docs/admin-api.md examples through AdminModels")
struct DocumentedExamplesTests {
    /// One ```json block (or one line of a block holding one object per line), with the
    /// heading it is under.
    struct Example: CustomStringConvertible {
        var section: String
        var json: String
        var description: String { "\(section): \(json.prefix(80))" }
    }

    static let document: String = {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/admin-api.md").path
        // A missing document leaves no examples, which everyRouteWithABodyHasExamples reports.
        return (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }()

    static let examples: [Example] = {
        var examples: [Example] = []
        var section = ""
        var block: [String]?
        for line in document.components(separatedBy: "\n") {
            if line.hasPrefix("#") && block == nil { section = line.trimmingCharacters(in: CharacterSet(charactersIn: "# ")) }
            if line == "```json" { block = []; continue }
            guard var lines = block else { continue }
            if line == "```" {
                let text = lines.joined(separator: "\n")
                let isOnePerLine = lines.count > 1 && lines.allSatisfy { $0.hasPrefix("{") && $0.hasSuffix("}") }
                for json in isOnePerLine ? lines : [text] { examples.append(Example(section: section, json: json)) }
                block = nil
            } else {
                lines.append(line)
                block = lines
            }
        }
        return examples
    }()

    /// The model each section's examples are bodies of; an error example is an `ErrorResponse` anywhere.
    static func model(for example: Example) -> (any Codable.Type)? {
        if example.json.hasPrefix(#"{"error""#) { return ErrorResponse.self }
        switch example.section {
        case "GET /health": return HealthResponse.self
        case "GET /v1/agents": return AgentListResponse.self
        case "GET /v1/servers": return ServerListResponse.self
        case "GET /v1/sessions": return SessionListResponse.self
        case "POST /v1/sessions", "POST /v1/sessions/{id}/stop", "POST /v1/sessions/{id}/cancel": return ControlResponse.self
        case "GET /v1/recordings": return RecordingListResponse.self
        case "GET /v1/recordings/{id}": return RecordingDetailResponse.self
        case "GET /v1/events": return ServerEvent.self
        default: return nil
        }
    }

    /// The same JSON value whatever its layout: keys sorted, no whitespace.
    static func canonical(_ json: Data) throws -> String {
        let value = try JSONSerialization.jsonObject(with: json)
        return String(decoding: try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .withoutEscapingSlashes]),
                      as: UTF8.self)
    }

    static func roundTrip<Model: Codable>(_ type: Model.Type, _ json: String) throws -> Data {
        let model = try AdminJSON.decoder().decode(type, from: Data(json.utf8))
        return try AdminJSON.encoder().encode(model)
    }

    @Test func everyRouteWithABodyHasExamples() {
        let covered = Set(Self.examples.compactMap { Self.model(for: $0) }.map { String(describing: $0) })
        #expect(covered == ["ErrorResponse", "HealthResponse", "AgentListResponse", "ServerListResponse", "SessionListResponse", "ControlResponse",
                            "RecordingListResponse", "RecordingDetailResponse", "ServerEvent"])
        #expect(Self.examples.count == 27, "\(Self.examples.map(\.description).joined(separator: "\n"))")
    }

    @Test(arguments: examples)
    func decodesAndEncodesBackUnchanged(_ example: Example) throws {
        let model = try #require(Self.model(for: example), "no model for an example under \"\(example.section)\"")
        let encoded = try Self.roundTrip(model, example.json)
        #expect(try Self.canonical(encoded) == Self.canonical(Data(example.json.utf8)))
    }

    /// The request body of the `curl -d` example, and the strictness the server relies on.
    @Test func startRequestBody() throws {
        let body = try #require(Self.document.firstMatch(of: /-d '(\{"agent".*\})'/)?.1)
        let request = try AdminJSON.decoder().decode(StartSessionRequest.self, from: Data(body.utf8))
        #expect(request == StartSessionRequest(agent: "cam-1", labels: ["room": "studio-a", "take": "7"]))
        #expect(try Self.canonical(AdminJSON.encoder().encode(request)) == Self.canonical(Data(body.utf8)))
        #expect(try AdminJSON.decoder().decode(StartSessionRequest.self, from: Data(#"{"agent":"cam-1"}"#.utf8)).labels == [:])
        #expect(throws: StartSessionRequest.UnknownFields(names: ["label"])) {
            try AdminJSON.decoder().decode(StartSessionRequest.self, from: Data(#"{"agent":"cam-1","label":{}}"#.utf8))
        }
    }

    @Test func nilIsAnExplicitNullWhereTheDocumentSaysSo() throws {
        let agent = ConnectedAgent(id: "cam-2", address: "10.0.0.6:51001", softwareVersion: "1.2.3",
                                   connectedAt: Date(timeIntervalSince1970: 1_714_557_600), lastSeen: Date(timeIntervalSince1970: 1_714_557_631.25))
        let json = String(decoding: try AdminJSON.encoder().encode(agent), as: UTF8.self)
        #expect(json == #"{"address":"10.0.0.6:51001","capture_failure":null,"clock":null,"clock_offset_millis":null,"connected_at":"2024-05-01T10:00:00.000Z","id":"cam-2","#
            + #""last_seen":"2024-05-01T10:00:31.250Z","round_trip_millis":null,"session_id":null,"software_version":"1.2.3"}"#)
        let anonymous = String(decoding: try AdminJSON.encoder().encode(HealthResponse(status: "ok", uptimeSeconds: 1.5)), as: UTF8.self)
        #expect(anonymous == #"{"status":"ok","uptime_seconds":1.5}"#)
    }
}

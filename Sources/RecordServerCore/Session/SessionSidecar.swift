import Foundation
import Shared

/// The files kept beside a session's recordings so that a restarted server can rebuild the
/// session when its agent resumes it: its `SessionOpen` (tracks, codec configuration,
/// labels) and the settings it was started with (segmenting, fragment length, fsync policy).
enum SessionSidecar {
    static let openFileName = "session.mcrp"
    static let settingsFileName = "session-settings.json"
    /// A session across agents: who its members are (``MemberFile``).
    static let membersFileName = "session-members.json"
    /// Everything the sidecar leaves in a session's directory.
    static let fileNames = [openFileName, settingsFileName, membersFileName]

    /// One member of a session across agents, as a restarted server needs it to take the
    /// member's resume: its agent, the id it knows the session by, its lane, its `SessionOpen`
    /// (the validator continues from its tracks) and its tracks' session ids.
    struct MemberFile: Codable {
        var agent: String
        var session: String
        var lane: UInt16
        /// The agent's `SessionOpen`, as the protocol frame, base64.
        var open: String
        /// Its track ids → the session's.
        var tracks: [String: UInt8]
    }

    static func write(_ open: SessionOpen, settings: SessionSettings.Pinned, directory: String) throws {
        try writeDurably(Data(buffer: try FrameEncoder().encode(.sessionOpen(open))), to: directory + "/" + openFileName)
        try writeDurably(try JSONEncoder().encode(settings), to: directory + "/" + settingsFileName)
    }

    static func readOpen(directory: String) throws -> SessionOpen {
        let data = try Data(contentsOf: URL(fileURLWithPath: directory + "/" + openFileName))
        var parser = MessageParser()
        parser.append(contentsOf: data)
        guard case .sessionOpen(let open)? = try parser.nextMessage() else {
            throw StorageError.damagedFile(path: directory + "/" + openFileName, reason: "it does not hold a SessionOpen")
        }
        return open
    }

    /// The settings a session was started with; nil for a session from before they were pinned.
    /// A file that exists but cannot be read is an error, not a fallback: resuming with other
    /// settings is exactly what pinning prevents.
    static func readPinnedSettings(directory: String) throws -> SessionSettings.Pinned? {
        let path = directory + "/" + settingsFileName
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        do { return try JSONDecoder().decode(SessionSettings.Pinned.self, from: data) } catch {
            throw ProtocolError(.storageFailure, "\(path) is damaged (\(error)); the session cannot resume with its own settings")
        }
    }

    /// Writes who the members of a session across agents are (nothing for a session of one agent).
    static func writeMembers(_ members: [SessionMember], directory: String) throws {
        guard members.count > 1 else { return }
        let files = try members.map { m in
            guard let open = m.open else { throw StorageError.damagedFile(path: directory, reason: "member \(m.agentID) has no SessionOpen") }
            return MemberFile(agent: m.agentID, session: m.wireID.value, lane: m.lane,
                              open: Data(buffer: try FrameEncoder().encode(.sessionOpen(open))).base64EncodedString(),
                              tracks: Dictionary(uniqueKeysWithValues: m.sessionTracks.map { (String($0.key), $0.value) }))
        }
        try writeDurably(try JSONEncoder().encode(files), to: directory + "/" + membersFileName)
    }

    /// The members of a session across agents, waiting for their agents after a restart; nil
    /// for a session of one agent. A file that exists but cannot be read is an error.
    static func readMembers(directory: String) throws -> [SessionMember]? {
        let path = directory + "/" + membersFileName
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        do {
            let files = try JSONDecoder().decode([MemberFile].self, from: data)
            return try files.enumerated().map { index, f in
                guard f.lane == UInt16(index), let bytes = Data(base64Encoded: f.open) else { throw StorageError.damagedFile(path: path, reason: "member \(index)") }
                var parser = MessageParser()
                parser.append(contentsOf: bytes)
                guard case .sessionOpen(let open)? = try parser.nextMessage() else {
                    throw StorageError.damagedFile(path: path, reason: "member \(index) holds no SessionOpen")
                }
                var tracks: [UInt8: UInt8] = [:]
                for (wire, session) in f.tracks {
                    guard let id = UInt8(wire) else { throw StorageError.damagedFile(path: path, reason: "track id \(wire)") }
                    tracks[id] = session
                }
                return SessionMember(agentID: f.agent, wireID: try SessionID(validating: f.session), lane: f.lane, open: open,
                                     sessionTracks: tracks, attachment: .left, clock: ClockMapping())
            }
        } catch {
            throw ProtocolError(.storageFailure, "\(path) is damaged (\(error)); the session's agents cannot resume it")
        }
    }

    /// Write to a temporary file, fsync, rename: a crash leaves the old file or the new one.
    private static func writeDurably(_ data: Data, to path: String) throws {
        let temporary = path + ".tmp"
        FileManager.default.createFile(atPath: temporary, contents: data, attributes: [.posixPermissions: 0o600])
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: temporary))
        try handle.synchronize()
        try handle.close()
        // Absent on first write; the rename below fails loudly if the old file is really in the way.
        try? FileManager.default.removeItem(atPath: path)
        try FileManager.default.moveItem(atPath: temporary, toPath: path)
    }
}

import Foundation
import Shared

/// The files kept beside a session's recordings so that a restarted server can rebuild the
/// session when its agent resumes it: its `SessionOpen` (tracks, codec configuration,
/// labels) and the settings it was started with (segmenting, fragment length, fsync policy).
enum SessionSidecar {
    static let openFileName = "session.mcrp"
    static let settingsFileName = "session-settings.json"
    /// Everything the sidecar leaves in a session's directory.
    static let fileNames = [openFileName, settingsFileName]

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

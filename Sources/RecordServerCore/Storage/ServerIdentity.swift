import Foundation

/// This server's id in a fleet that shares a catalog: `<dataDir>/server-id`, written once
/// (`HOSTNAME-XXXXXX`, six random hex digits) and read on every start, so a restarted server is
/// the same server (it resumes and recovers its own sessions) and two servers never share one,
/// even on hosts with the same name. Stamped on every session the server inserts
/// (`SessionRecord.serverID`) and on its heartbeat row (`GET /v1/servers`).
enum ServerIdentity {
    static let fileName = "server-id"

    /// Reads the id, creating the file on first start.
    /// - Throws: `StorageError` naming the file when it cannot be read or written, or holds
    ///   something that is not an id.
    static func load(dataDirectory: String) throws(StorageError) -> String {
        let path = dataDirectory + "/" + fileName
        if let data = FileManager.default.contents(atPath: path) {
            let id = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard isValid(id) else {
                throw .damagedFile(path: path, reason: "it holds \"\(id.prefix(80))\", not a server id (1–64 of A-Z a-z 0-9 . _ -); " +
                                   "delete it to have a new id made, or write the id this server had")
            }
            return id
        }
        let id = newID()
        do { try Data((id + "\n").utf8).write(to: URL(fileURLWithPath: path), options: .atomic) } catch {
            throw .systemCall(operation: "write", path: path, errno: Int32((error as NSError).code))
        }
        return id
    }

    static func isValid(_ id: String) -> Bool {
        (1...64).contains(id.utf8.count) && id.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A) || byte == 0x2E || byte == 0x5F || byte == 0x2D
        }
    }

    private static func newID() -> String {
        let host = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "server"
        let cleaned = String(host.unicodeScalars.filter { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "-") }.prefix(40))
        let suffix = String(format: "%06x", UInt32.random(in: 0..<0x100_0000))
        return (cleaned.isEmpty ? "server" : cleaned) + "-" + suffix
    }
}

import Foundation

/// Errors from reading or writing a revocation list.
public enum RevocationListError: Error, Equatable, CustomStringConvertible {
    case file(FileAccessError)
    /// The file exists but is not the expected JSON.
    case malformed(path: String, reason: String)
    /// A serial number is not hexadecimal.
    case invalidSerialNumber(String)

    public var description: String {
        switch self {
        case .file(let error): return error.description
        case .malformed(let path, let reason): return "\(path): not a valid revocation list (\(reason))"
        case .invalidSerialNumber(let serial): return "invalid serial number \"\(serial)\": expected hexadecimal digits"
        }
    }
}

/// The set of revoked agent certificates, kept as a small JSON file (`revoked.json`):
///
/// ```json
/// {"revoked":[{"serial":"4f…","agent":"cam-1","revokedAt":"2025-01-01T12:00:00Z"}]}
/// ```
///
/// Why not an X.509 CRL: the recording server is the only party that ever verifies agent
/// certificates, so there is no third party that would need a signed, standard format.
/// A CRL would have to be re-signed by the CA key (which should stay offline with
/// `recordctl ca`) on every change and periodically before `nextUpdate`, and BoringSSL
/// rejects *all* handshakes once a configured CRL expires. A plain list the server checks
/// after the handshake (`PeerIdentity.serialNumber(of:)` → `contains(serial:)`) is simpler,
/// can be edited without the CA key, and is readable by an operator.
public struct RevocationList: Sendable, Equatable {
    /// One revoked certificate.
    public struct Entry: Sendable, Equatable, Codable {
        /// Serial number, normalised lowercase hex (see `IssuedCertificate.serialNumber`).
        public var serial: String
        /// The agent the certificate was issued to, for humans reading the file.
        public var agent: String
        public var revokedAt: Date

        public init(serial: String, agent: String, revokedAt: Date) {
            self.serial = serial
            self.agent = agent
            self.revokedAt = revokedAt
        }
    }

    /// Conventional file name next to the CA files.
    public static let fileName = "revoked.json"

    /// Entries in the order they were revoked.
    public private(set) var entries: [Entry]

    public init(entries: [Entry] = []) {
        self.entries = entries
    }

    private struct FileFormat: Codable {
        var revoked: [Entry]
    }

    /// Reads a list from `path`.
    ///
    /// - Parameter allowMissing: when `true` (the default) a missing file is an empty list,
    ///   so that a deployment that never revoked anything needs no file; pass `false` where
    ///   a missing file must be noticed.
    public static func load(path: String, allowMissing: Bool = true) throws(RevocationListError) -> RevocationList {
        let bytes: [UInt8]
        do {
            bytes = try SecureFiles.read(path: path)
        } catch {
            if case .missing = error, allowMissing { return RevocationList() }
            throw .file(error)
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let file: FileFormat
        do {
            file = try decoder.decode(FileFormat.self, from: Data(bytes))
        } catch {
            throw .malformed(path: path, reason: String(describing: error))
        }
        var list = RevocationList()
        for entry in file.revoked {
            let serial = SerialNumberFormat.normalize(entry.serial)
            guard isHex(entry.serial), !serial.isEmpty else {
                throw .malformed(path: path, reason: "invalid serial \"\(entry.serial)\"")
            }
            list.entries.append(Entry(serial: serial, agent: entry.agent, revokedAt: entry.revokedAt))
        }
        return list
    }

    /// Adds a serial to the list (no-op if it is already there).
    ///
    /// - Parameters:
    ///   - serial: hex, with or without `:` separators or leading zeros.
    ///   - agentID: recorded for operators; not used for matching, since one agent can
    ///     hold several certificates and only the revoked one must stop working.
    public mutating func revoke(serial: String, agentID: String, at date: Date = Date()) throws(RevocationListError) {
        let normalized = SerialNumberFormat.normalize(serial)
        guard Self.isHex(serial), !normalized.isEmpty else { throw .invalidSerialNumber(serial) }
        guard !contains(serial: normalized) else { return }
        entries.append(Entry(serial: normalized, agent: agentID, revokedAt: date))
    }

    /// `true` when the certificate with this serial is revoked.
    public func contains(serial: String) -> Bool {
        let normalized = SerialNumberFormat.normalize(serial)
        return entries.contains { $0.serial == normalized }
    }

    /// Writes the list atomically (temporary file + rename), so that a server reloading
    /// it never reads a half-written file.
    public func save(path: String) throws(RevocationListError) {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data: Data
        do {
            data = try encoder.encode(FileFormat(revoked: entries))
        } catch {
            // Encoding strings and dates cannot fail; keep the error typed anyway.
            throw .malformed(path: path, reason: String(describing: error))
        }
        do {
            try SecureFiles.write(Array(data) + [0x0A], to: path, mode: SecureFiles.publicFileMode)
        } catch {
            throw .file(error)
        }
    }

    /// Hex digits, optionally separated by colons (the form `openssl x509 -serial` and
    /// many tools print).
    private static func isHex(_ text: String) -> Bool {
        !text.isEmpty && text.unicodeScalars.allSatisfy {
            ("0"..."9").contains($0) || ("a"..."f").contains($0) || ("A"..."F").contains($0) || $0 == ":"
        }
    }
}

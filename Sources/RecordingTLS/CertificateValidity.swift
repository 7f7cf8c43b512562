import Foundation
import NIOSSL

/// When a certificate file's first certificate (the leaf) is valid, read so that a program can
/// say "expired on 2026-11-20 10:00 UTC" before the handshake fails with a bare
/// CERTIFICATE_EXPIRED, and warn while there is still time to renew.
public struct CertificateValidity: Sendable, Equatable {
    public var notBefore: Date
    public var notAfter: Date

    public init(notBefore: Date, notAfter: Date) {
        self.notBefore = notBefore
        self.notAfter = notAfter
    }

    /// Renewal warnings start this long before expiry.
    public static let renewalWarning: TimeInterval = 14 * 86_400

    /// The validity of the leaf certificate in the PEM file at `path`; nil when the file holds
    /// no readable certificate (the TLS set-up reports that with its own message).
    public static func read(pemFile path: String) -> CertificateValidity? {
        // An unreadable or unparsable file is not this check's to report: the TLS set-up that
        // loads the same file fails with a message naming it, so nil (no date known) is right.
        guard let bytes = FileManager.default.contents(atPath: path),
              let leaf = try? NIOSSLCertificate.fromPEMBytes(Array(bytes)).first
        else { return nil }
        return CertificateValidity(notBefore: Date(timeIntervalSince1970: TimeInterval(leaf.notValidBefore)),
                                   notAfter: Date(timeIntervalSince1970: TimeInterval(leaf.notValidAfter)))
    }

    /// Why the certificate in `file` cannot be used at `now`, in words that name the date and
    /// the fix; nil while it is valid.
    public func problem(at now: Date, file: String, renew: String) -> String? {
        if now > notAfter {
            return "\(file): the certificate expired on \(Self.format(notAfter)); \(renew)"
        }
        if now < notBefore {
            return "\(file): the certificate is not valid before \(Self.format(notBefore)) (is this host's clock right? "
                + "it reads \(Self.format(now))); \(renew)"
        }
        return nil
    }

    /// A warning while less than ``renewalWarning`` is left; nil otherwise.
    public func renewalWarning(at now: Date, file: String, renew: String) -> String? {
        guard now <= notAfter, notAfter.timeIntervalSince(now) < Self.renewalWarning else { return nil }
        let days = Int(notAfter.timeIntervalSince(now) / 86_400)
        return "\(file): the certificate expires on \(Self.format(notAfter)) (in \(days) day\(days == 1 ? "" : "s")); \(renew)"
    }

    /// "2026-11-20 10:00 UTC".
    public static func format(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm 'UTC'"
        return formatter.string(from: date)
    }
}

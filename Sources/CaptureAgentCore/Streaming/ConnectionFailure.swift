import Foundation
import RecordingTLS
import Shared

/// A failed connection attempt in an operator's words: the cause, what to do, and whether
/// trying again can help. Library errors (BoringSSL's reason codes, NIO's socket errors) are
/// recognised by their stable names and never shown raw: they carry build paths and debug
/// notation that mean nothing to the person reading the journal.
struct ConnectionFailure: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        /// The server is down, restarting or unreachable for now: reconnect with backoff.
        case transient
        /// The server refuses this agent, or is not an MCRP server: retrying cannot help.
        case permanent
    }

    var kind: Kind
    var message: String

    /// The exit status of an agent stopped by a permanent refusal (sysexits' EX_NOPERM); the
    /// systemd unit does not restart on it.
    static let permanentExitCode: Int32 = 77

    /// Classifies an error from connecting or from the TLS layer. `certificateExpiry` is when
    /// the agent's own certificate expires, named when the server refuses it as expired.
    static func describe(_ error: any Error, host: String, port: Int, certificateExpiry: Date? = nil) -> ConnectionFailure {
        let raw = String(describing: error)
        let server = "\(host):\(port)"
        func has(_ names: String...) -> Bool { names.contains { raw.contains($0) } }
        if has("WRONG_VERSION_NUMBER", "HTTP_REQUEST", "PACKET_LENGTH_TOO_LONG", "RECORD_LENGTH_MISMATCH") {
            return .init(kind: .permanent, message: "\(server) does not speak TLS: is it the admin port (7444 by default) instead of "
                         + "the agent port (7443), or a server running with insecurePlaintext? Fix --server")
        }
        if has("CERTIFICATE_VERIFY_FAILED") {
            return .init(kind: .permanent, message: "the certificate of \(server) is not trusted: it is not signed by the CA given with "
                         + "--ca, it has expired, or it does not name \(host), the host given with --server. Check --ca and --server")
        }
        if has("CERTIFICATE_REVOKED") {
            return .init(kind: .permanent, message: "\(server) refused this agent's certificate: it has been revoked. Issue a new one "
                         + "(recordctl ca issue agent …)")
        }
        if has("CERTIFICATE_EXPIRED") {
            let when = certificateExpiry.map { " on \(CertificateValidity.format($0))" } ?? ""
            return .init(kind: .permanent, message: "\(server) refused this agent's certificate: it expired\(when) (or the server's "
                         + "clock is wrong). Issue a new one (recordctl ca issue agent …)")
        }
        if has("UNKNOWN_CA", "BAD_CERTIFICATE", "CERTIFICATE_REQUIRED", "HANDSHAKE_FAILURE", "UNSUPPORTED_CERTIFICATE") {
            return .init(kind: .permanent, message: "\(server) refused this agent's certificate: it is not issued by the server's CA "
                         + "(or none was given). Give the agent a certificate from that CA (--cert, --key)")
        }
        if has("NO_APPLICATION_PROTOCOL", "NO_PROTOCOLS_AVAILABLE") {
            return .init(kind: .permanent, message: "\(server) does not speak the recording protocol (ALPN mcrp/1): check --server")
        }
        if has("Connection refused", "ECONNREFUSED", "connection refused") {
            return .init(kind: .transient, message: "nothing accepts connections at \(server): record-server is stopped or restarting")
        }
        if has("timed out", "Timeout", "timeout", "ETIMEDOUT") {
            return .init(kind: .transient, message: "no answer from \(server) in time: the network or the host is down")
        }
        if has("No route to host", "EHOSTUNREACH", "Network is unreachable", "ENETUNREACH") {
            return .init(kind: .transient, message: "\(server) cannot be reached: no route (network down or wrong address)")
        }
        if has("Name or service not known", "nodename nor servname", "EAI_") {
            return .init(kind: .transient, message: "the name \(host) does not resolve (DNS); check --server")
        }
        if has("uncleanShutdown", "Connection reset", "ECONNRESET", "EPIPE", "Broken pipe") {
            return .init(kind: .transient, message: "\(server) closed the connection abruptly")
        }
        return .init(kind: .transient, message: "connection to \(server) failed: \(Self.withoutDebugText(raw))")
    }

    /// Classifies an Error the server sent during the handshake.
    static func describe(refusal report: ErrorReport) -> ConnectionFailure {
        switch report.code {
        case .authenticationFailed:
            return .init(kind: .permanent, message: "the server refused this agent: \(report.message) (is the certificate revoked, "
                         + "or does --agent-id differ from the id in the certificate?)")
        case .noCommonVersion:
            return .init(kind: .permanent, message: "the server speaks no protocol version this agent does: \(report.message); update one of them")
        default:
            return .init(kind: .transient, message: "the server refused the connection: \(report.code) \(report.message)")
        }
    }

    /// The text with anything after " at /" (a source location) and NIO's `[IPv4]` notation removed.
    static func withoutDebugText(_ raw: String) -> String {
        var text = raw
        if let range = text.range(of: " at /") { text = String(text[..<range.lowerBound]) }
        return text.replacingOccurrences(of: "[IPv4]", with: "").replacingOccurrences(of: "[IPv6]", with: "")
    }
}

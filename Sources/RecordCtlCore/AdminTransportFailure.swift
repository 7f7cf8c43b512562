import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// Why a request got no HTTP answer, in recordctl's words: the cause and what to check. The
/// libraries' descriptions (NIO's `IOError`, BoringSSL's error stacks) are written for
/// developers, so they are mapped here rather than shown.
enum AdminTransportFailure: Equatable, Sendable {
    case refused
    case unknownHost
    case timedOut(seconds: Double)
    /// The connection closed before an answer.
    case closed
    /// No route, network down, reset: the system's own words for the errno.
    case network(String)
    /// The TLS handshake failed: an untrusted or mismatched certificate, or no TLS on the port.
    case tls(String)
    /// Something answered, but not with HTTP.
    case notHTTP
    case other(String)

    init(_ error: any Error, timeout: TimeAmount) {
        let seconds = Double(timeout.nanoseconds) / 1_000_000_000
        switch error {
        case let error as HTTPClientError:
            switch error {
            case .connectTimeout, .deadlineExceeded, .readTimeout, .writeTimeout, .getConnectionFromPoolTimeout:
                self = .timedOut(seconds: seconds)
            case .tlsHandshakeTimeout:
                self = .tls("the TLS handshake timed out")
            case .remoteConnectionClosed:
                self = .closed
            default:
                self = .other("\(error.shortDescription)")
            }
        case let error as IOError:
            self.init(errno: error.errnoCode, timeout: seconds)
        case let error as NIOConnectionError:
            // Happy Eyeballs: a name that resolved to nothing, or every address failed.
            if let first = error.connectionErrors.first {
                self.init(first.error, timeout: timeout)
            } else {
                self = .unknownHost
            }
        case is SocketAddressError:
            self = .unknownHost
        case let error as NIOSSLExtraError where error == .failedToValidateHostname:
            self = .tls("the server's certificate is not for this host name")
        case is NIOSSLError, is BoringSSLError, is NIOSSLExtraError:
            self = .tls("the server's certificate is not trusted, or the server does not speak TLS on this port")
        case is HTTPParserError:
            self = .notHTTP
        default:
            self = .other(String(describing: type(of: error)))
        }
    }

    private init(errno code: Int32, timeout seconds: Double) {
        switch code {
        case ECONNREFUSED: self = .refused
        case ETIMEDOUT: self = .timedOut(seconds: seconds)
        case ECONNRESET, EPIPE: self = .closed
        default: self = .network(String(cString: strerror(code)).lowercased())
        }
    }

    /// What follows "cannot reach record-server at URL: ".
    var explanation: String {
        switch self {
        case .refused:
            return "connection refused — is it running with the admin API enabled? check --server / $RECORDCTL_SERVER"
        case .unknownHost:
            return "unknown host — check --server / $RECORDCTL_SERVER"
        case .timedOut(let seconds):
            return "no answer within \(Formatting.seconds(seconds)) — is the host up and the server not overloaded? (--timeout sets the wait)"
        case .closed:
            return "the connection was closed before an answer — is this the admin API's port, and plain HTTP or https as the server expects?"
        case .network(let reason):
            return "\(reason) — check the network and --server / $RECORDCTL_SERVER"
        case .tls(let reason):
            return "TLS failed: \(reason)"
        case .notHTTP:
            return "the answer was not HTTP — is this the admin API's port (not the ingest port)?"
        case .other(let kind):
            return "the request failed (\(kind))"
        }
    }
}

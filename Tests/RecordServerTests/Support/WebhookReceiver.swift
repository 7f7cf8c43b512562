import Foundation
import TestSupport

/// A webhook receiver we did not write the HTTP side of: Python's http.server on loopback, in
/// a child process. It answers each POST with the next status of `answers` (the last one
/// repeats) and checks the signature itself with Python's hmac, an implementation independent
/// of the server's. `hanging` accepts TCP connections and never reads or answers.
final class WebhookReceiver: Sendable {
    /// One POST as the receiver saw it.
    struct Request: Decodable, Sendable {
        let n: Int
        let status: Int
        let event: String?
        let delivery: String?
        let timestamp: String?
        let signature: String?
        let contentType: String?
        /// Whether `signature` is `sha256=` + HMAC-SHA256(secret, timestamp + "." + body), by Python.
        let signatureValid: Bool
        let body: String

        enum CodingKeys: String, CodingKey {
            case n, status, event, delivery, timestamp, signature, body
            case contentType = "content_type", signatureValid = "signature_valid"
        }
    }

    private let process: ChildProcess
    let port: Int
    var url: String { "http://127.0.0.1:\(port)/hooks/recorder" }

    private init(process: ChildProcess, port: Int) {
        self.process = process
        self.port = port
    }

    static func start(in directory: String, name: String, secretFile: String, answers: [Int] = [200]) async throws -> WebhookReceiver {
        try await launch(in: directory, name: name, ["serve", secretFile, answers.map(String.init).joined(separator: ",")])
    }

    static func hanging(in directory: String, name: String) async throws -> WebhookReceiver {
        try await launch(in: directory, name: name, ["hang"])
    }

    private static func launch(in directory: String, name: String, _ arguments: [String]) async throws -> WebhookReceiver {
        let process = try ChildProcess("/usr/bin/python3", ["-u", "-c", script] + arguments, logPath: directory + "/\(name).log")
        let port = try await eventually("the receiver's port") { () -> Int? in
            process.log.split(separator: "\n").first { $0.hasPrefix("PORT ") }.flatMap { Int($0.dropFirst(5)) }
        }
        return WebhookReceiver(process: process, port: port)
    }

    /// The POSTs received so far, in the order they arrived.
    var requests: [Request] {
        process.log.split(separator: "\n").filter { $0.hasPrefix("REQUEST ") }.compactMap { line in
            // The log is read while Python writes it: a line cut short is read whole at the next poll.
            try? JSONDecoder().decode(Request.self, from: Data(line.dropFirst(8).utf8))
        }
    }

    /// Connections a hanging receiver has accepted (and holds).
    var acceptedConnections: Int { process.log.split(separator: "\n").filter { $0 == "ACCEPTED" }.count }

    var log: String { process.log }

    func stop() async { await process.stop(grace: .seconds(5)) }

    private static let script = #"""
    import hashlib, hmac, json, os, signal, socket, sys, threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    # The test process may ignore or block SIGTERM, and a child inherits both: end on it explicitly.
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM])

    if sys.argv[1] == "hang":
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        print("PORT", listener.getsockname()[1], flush=True)
        held = []
        while True:
            connection, _ = listener.accept()
            held.append(connection)  # never read, never answered, never closed
            print("ACCEPTED", flush=True)

    secret = open(sys.argv[2], "rb").read().strip()
    answers = [int(a) for a in sys.argv[3].split(",")]
    lock = threading.Lock()
    count = [0]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            timestamp = self.headers.get("X-Recorder-Timestamp", "")
            expected = "sha256=" + hmac.new(secret, timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
            signature = self.headers.get("X-Recorder-Signature", "")
            with lock:
                n = count[0]
                count[0] += 1
                status = answers[min(n, len(answers) - 1)]
                print("REQUEST " + json.dumps({
                    "n": n, "status": status, "event": self.headers.get("X-Recorder-Event"),
                    "delivery": self.headers.get("X-Recorder-Delivery"), "timestamp": timestamp, "signature": signature,
                    "content_type": self.headers.get("Content-Type"),
                    "signature_valid": hmac.compare_digest(expected, signature), "body": body.decode()}), flush=True)
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *arguments):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print("PORT", server.server_address[1], flush=True)
    server.serve_forever()
    """#
}

import Foundation

/// A real S3 server for the object storage tests: Ceph's RADOS Gateway on loopback, started by
/// scripts/object-store.sh in a temporary directory once per test process (about 13 s) and
/// shared by every suite that asks for it; stopped when the process exits, and by the script's
/// watcher if the process dies without exiting.
///
/// The tests that use it run when `OBJECT_STORE_TESTS=1` (the test command's bootstrap sets it,
/// and installs Ceph); there a store that cannot start fails them with the script's message,
/// which names what is missing.
public final class ObjectStoreFixture: Sendable {
    public static let script = BuiltProducts.repositoryRoot.appendingPathComponent("scripts/object-store.sh").path
    public static let enabled = ProcessInfo.processInfo.environment["OBJECT_STORE_TESTS"] == "1"

    public let directory: String
    /// `http://127.0.0.1:PORT`.
    public let endpoint: String
    public let accessKeyFile: String
    public let secretKeyFile: String
    /// Seconds from the script's start until S3 answered.
    public let startSeconds: Double

    /// The store of this test process, started on first use.
    public static func shared() async throws -> ObjectStoreFixture {
        try await Starter.shared.fixture()
    }

    /// A bucket name no other test (or earlier run against a reused store) has used.
    public static func uniqueBucket(_ purpose: String) -> String {
        "\(purpose)-\(UUID().uuidString.lowercased().prefix(13))"
    }

    private init(directory: String, endpoint: String, startSeconds: Double) {
        self.directory = directory
        self.endpoint = endpoint
        accessKeyFile = directory + "/access-key"
        secretKeyFile = directory + "/secret-key"
        self.startSeconds = startSeconds
    }

    /// Starts once; every caller gets the same store, or the same failure (a store that did not
    /// start in one try would not in the next test's either, and each try costs a timeout).
    private actor Starter {
        static let shared = Starter()
        private var start: Task<ObjectStoreFixture, any Error>?

        func fixture() async throws -> ObjectStoreFixture {
            if start == nil { start = Task { try await ObjectStoreFixture.startStore() } }
            return try await start!.value
        }
    }

    /// The directory to stop at exit (set once, before the handler is registered), and whether to
    /// remove it: not after a failed start, whose logs the error points at.
    nonisolated(unsafe) private static var directoryToStop: String?
    nonisolated(unsafe) private static var removeAtExit = false

    private static func startStore() async throws -> ObjectStoreFixture {
        // The test command starts the store before the tests (its start loads both cores for
        // seconds, enough to time out handshakes of tests running beside it) and names it here.
        if let given = ProcessInfo.processInfo.environment["OBJECT_STORE_DIR"],
           // No endpoint file: the test command's start failed; start one here, which names why if it fails too.
           let endpoint = try? String(contentsOfFile: given + "/endpoint", encoding: .utf8) {
            return ObjectStoreFixture(directory: given, endpoint: endpoint.trimmingCharacters(in: .whitespacesAndNewlines), startSeconds: 0)
        }
        // Not a TemporaryDirectory: this one must outlive every test, until the exit handler.
        let directory = NSTemporaryDirectory() + "object-store-" + UUID().uuidString
        let environment = ProcessInfo.processInfo.environment.merging(["OBJECT_STORE_OWNER_PID": String(getpid())]) { $1 }
        let started = ContinuousClock.now
        let output = try await offPool { try runProcess("/bin/bash", [script, "start", directory], environment: environment) }
        let elapsed = ContinuousClock.now - started
        directoryToStop = directory
        atexit {
            guard let directory = ObjectStoreFixture.directoryToStop else { return }
            // At exit nothing can report a failure; the script's watcher stops the store anyway.
            _ = try? runProcess("/bin/bash", [ObjectStoreFixture.script, "stop", directory])
            if ObjectStoreFixture.removeAtExit && ProcessInfo.processInfo.environment["KEEP_TEST_FILES"] == nil {
                try? FileManager.default.removeItem(atPath: directory)  // As above; it is under /tmp.
            }
        }
        guard output.status == 0 else {
            throw ToolError.failed("scripts/object-store.sh start \(directory) (needs root and Ceph: BOOTSTRAP_FOR_TESTS=1 source scripts/bootstrap.sh)", output)
        }
        removeAtExit = true
        let endpoint = output.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print("object store: RGW at \(endpoint) in \(directory), S3 answered after \(String(format: "%.1f", seconds)) s")
        return ObjectStoreFixture(directory: directory, endpoint: endpoint, startSeconds: seconds)
    }
}

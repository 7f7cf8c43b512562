import Foundation

/// A fresh directory under the system temporary directory, removed when the value goes away
/// (or earlier, with ``remove()``); kept when `KEEP_TEST_FILES` is set, for looking at the
/// MP4s by hand.
public final class TemporaryDirectory: @unchecked Sendable {
    public let path: String

    public init(prefix: String = "tests") throws {
        let created = NSTemporaryDirectory() + prefix + "-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: created, withIntermediateDirectories: true)
        // Resolved, so comparisons with realpath-based results hold even if /tmp is a link.
        path = URL(fileURLWithPath: created).resolvingSymlinksInPath().path
    }

    deinit { remove() }

    public var url: URL { URL(fileURLWithPath: path, isDirectory: true) }

    /// The path of `name` inside the directory (not created).
    public func file(_ name: String) -> String { path + "/" + name }

    /// The URL of `name` inside the directory (not created).
    public func fileURL(_ name: String) -> URL { URL(fileURLWithPath: file(name)) }

    /// Writes `bytes` to `name` and returns its path.
    @discardableResult
    public func file(_ name: String, _ bytes: [UInt8]) throws -> String {
        try Data(bytes).write(to: fileURL(name))
        return file(name)
    }

    /// Writes `text` to `name` and returns its path.
    @discardableResult
    public func write(_ text: String, to name: String) throws -> String {
        try file(name, Array(text.utf8))
    }

    /// The names of the entries in the directory, sorted.
    public func listing() -> [String] {
        // A directory removed by the test lists as empty, which is what it holds.
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }

    /// Best effort, and safe to call twice: a directory a test already removed (or one that
    /// cannot be removed) holds nothing a later test reads, as every directory is new.
    public func remove() {
        if ProcessInfo.processInfo.environment["KEEP_TEST_FILES"] != nil {
            print("kept \(path) (KEEP_TEST_FILES)")
            return
        }
        try? FileManager.default.removeItem(atPath: path)
    }
}

import Foundation

/// The executables `swift build --build-tests` leaves next to the tests, for tests that run
/// them as real processes (crashes, restarts, the operator's command line).
public enum BuiltProducts {
    /// This checkout (Tests/TestSupport/BuiltProducts.swift → repository root).
    public static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// `.build/debug/NAME` of this checkout, or next to the test bundle; nil when not built.
    public static func path(_ name: String) -> String? {
        let root = repositoryRoot
        let candidates = [
            root.appendingPathComponent(".build/debug/\(name)").path,
            root.appendingPathComponent(".build/x86_64-unknown-linux-gnu/debug/\(name)").path,
            Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent(name).path,
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}

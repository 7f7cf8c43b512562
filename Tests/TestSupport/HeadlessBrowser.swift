import Foundation

/// Debian's chromium and chromedriver (apt) and selenium (PyPI, in the virtual environment
/// scripts/bootstrap.sh makes for the tests), which drive the web console's browser tests
/// (Tests/Browser). Nothing is downloaded when the tests run.
public enum HeadlessBrowser {
    public static let chromium = "/usr/bin/chromium"
    public static let chromedriver = "/usr/bin/chromedriver"
    public static var python: String { Schemathesis.python }
    public static func script(_ name: String) -> String {
        BuiltProducts.repositoryRoot.appendingPathComponent("Tests/Browser/\(name)").path
    }

    /// Throws, saying how to install them, when a part is missing.
    public static func requireInstalled() throws {
        for tool in [chromium, chromedriver] where !FileManager.default.isExecutableFile(atPath: tool) {
            throw ToolError.notFound("\(tool) (install it with: BOOTSTRAP_FOR_TESTS=1 source scripts/bootstrap.sh, or apt-get install chromium chromium-driver)")
        }
        let selenium = Schemathesis.environment + "/bin/python"
        guard FileManager.default.isExecutableFile(atPath: selenium),
              FileManager.default.fileExists(atPath: Schemathesis.environment + "/.selenium-installed") else {
            throw ToolError.notFound("selenium in \(Schemathesis.environment) (install it with: BOOTSTRAP_FOR_TESTS=1 source scripts/bootstrap.sh)")
        }
    }
}

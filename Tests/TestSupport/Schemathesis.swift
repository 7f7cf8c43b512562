import Foundation

/// schemathesis (PyPI) and the Python it runs on: the virtual environment scripts/bootstrap.sh
/// makes under `.build/schemathesis`, so the tests download nothing when they run.
public enum Schemathesis {
    public static let environment = BuiltProducts.repositoryRoot.appendingPathComponent(".build/schemathesis").path
    /// Its Python, with PyYAML and jsonschema_rs (schemathesis' own dependencies).
    public static var python: String { environment + "/bin/python" }
    public static var executable: String { environment + "/bin/schemathesis" }
    /// The checker of docs/openapi.yaml's examples (scripts/lib/openapi_document.py).
    public static var documentChecker: String { BuiltProducts.repositoryRoot.appendingPathComponent("scripts/lib/openapi_document.py").path }

    /// Throws, saying how to install it, when the environment is missing.
    public static func requireInstalled() throws {
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw ToolError.notFound("\(executable) (install it with: source scripts/bootstrap.sh, which makes the virtual environment)")
        }
    }
}

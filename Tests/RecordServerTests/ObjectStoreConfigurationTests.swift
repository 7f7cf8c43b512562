import Foundation
@testable import RecordServerCore
import Testing
import TestSupport

/// `objectStore` in the configuration and on the command line: what is wrong is named with its
/// field and the fix, before the server starts.
@Suite struct ObjectStoreConfigurationTests {
    @Test func aBadLocationOrAMissingKeyFileIsNamedWithItsField() throws {
        let scratch = try TemporaryDirectory(prefix: "object-store-config")
        let access = try scratch.write("AKIDEXAMPLE\n", to: "access")
        var configuration = ServerConfiguration()
        configuration.objectStore = .init(url: "s3:///?endpoint=http://127.0.0.1:1", accessKeyFile: access, secretKeyFile: scratch.file("missing"))
        let problems = configuration.problems()
        #expect(problems.contains { $0.field == "objectStore.url" && $0.description.contains("bucket") }, "\(problems)")
        #expect(problems.contains { $0.field == "objectStore.accessKeyFile" && $0.description.contains("missing") }, "\(problems)")
    }

    @Test func theCommandLineFillsOrReplacesTheSection() throws {
        let merged = try ServerConfiguration().merging(overrides: .init(
            objectStore: "s3://b?endpoint=http://127.0.0.1:7480", objectStoreAccessKeyFile: "keys/a", objectStoreSecretKeyFile: "/etc/s"),
            workingDirectory: "/srv")
        #expect(merged.objectStore == .init(url: "s3://b?endpoint=http://127.0.0.1:7480", accessKeyFile: "/srv/keys/a", secretKeyFile: "/etc/s"))
        let decoded = try JSONDecoder().decode(ServerConfiguration.self, from: Data("""
            {"objectStore": {"url": "s3://b?endpoint=http://h:1", "accessKeyFile": "/a", "secretKeyFile": "/s", "keepLocalCopy": false}}
            """.utf8))
        #expect(decoded.objectStore?.keepLocalCopy == false)
        #expect(throws: (any Error).self) {
            _ = try JSONDecoder().decode(ServerConfiguration.self, from: Data(#"{"objectStore": {"url": "s3://b", "accesKeyFile": "/a"}}"#.utf8))
        }
    }
}

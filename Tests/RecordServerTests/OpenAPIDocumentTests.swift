import Foundation
import Logging
@testable import RecordServerCore
import Testing
import TestSupport

/// docs/openapi.yaml against the server, beyond what schemathesis checks (APIFuzzTests): the
/// copy the server serves is that file, its operations are exactly the routes the listener
/// registers, and every example in it fits its own schema.
@Suite("OpenAPI document")
struct OpenAPIDocumentTests {
    static let documentPath = BuiltProducts.repositoryRoot.appendingPathComponent("docs/openapi.yaml").path

    @Test func theServerServesDocsOpenAPIYamlByteForByte() async throws {
        let onDisk = try Data(contentsOf: URL(fileURLWithPath: Self.documentPath))
        try await withAdminServer { client in
            let served = try await client.get(OpenAPIDocument.path)
            #expect(served.status == 200)
            #expect(served.header("Content-Type") == "application/yaml")
            #expect(served.body == onDisk, "the compiled-in document differs from docs/openapi.yaml: rebuild")
            let anonymous = try await client.get(OpenAPIDocument.path, auth: .none)
            #expect(anonymous.status == 401, "the document is behind the token like every route but /health")
        }
    }

    /// What scripts/lib/openapi_document.py reads from the document: its operations, after it
    /// checked every example against its schema.
    struct Summary: Decodable {
        var operations: [String]
        var examples: Int
    }

    @Test func everyRouteIsDocumentedAndEveryDocumentedOperationIsARoute() async throws {
        try Schemathesis.requireInstalled()
        let checked = try await runToolOffPool(Schemathesis.python, [Schemathesis.documentChecker, Self.documentPath])
        #expect(checked.status == 0, "\(checked.stderr)")
        let summary = try JSONDecoder().decode(Summary.self, from: checked.stdout)

        let server = AdminServer(port: 0, token: adminToken, backend: FakeAdminBackend(), metrics: ServerMetrics(),
                                 logger: Logger(label: "openapi-test") { _ in SwiftLogNoOpLogHandler() })
        let routes = Set(server.makeRouter().routes.map { "\($0.method.rawValue) \($0.path)" })
        #expect(routes.count >= 14, "\(routes.sorted())")
        #expect(routes.subtracting(summary.operations).isEmpty, "routes missing from docs/openapi.yaml")
        #expect(Set(summary.operations).subtracting(routes).isEmpty, "operations in docs/openapi.yaml the server does not have")
        // The response examples of every JSON route and the error bodies: 27 when this was written.
        #expect(summary.examples >= 27)
    }

    /// The checker is not one that passes everything: an example that breaks its schema (an
    /// id with a space, a month 13, a state the server never sends) is named with its place.
    @Test func theExampleCheckerRefusesAnExampleOffItsSchema() async throws {
        try Schemathesis.requireInstalled()
        let scratch = try TemporaryDirectory(prefix: "openapi")
        let broken = try String(contentsOfFile: Self.documentPath, encoding: .utf8)
            .replacingOccurrences(of: "state: recording\n", with: "state: bogus\n")
            .replacingOccurrences(of: "id: cam-2\n", with: "id: \"cam 2\"\n")
        let path = try scratch.write(broken, to: "openapi.yaml")
        let checked = try await runToolOffPool(Schemathesis.python, [Schemathesis.documentChecker, path])
        #expect(checked.status == 1)
        #expect(checked.stderr.contains("\"bogus\" is not one of"), "\(checked.stderr)")
        #expect(checked.stderr.contains("\"cam 2\" does not match"), "\(checked.stderr)")
        #expect(checked.stderr.contains("paths//v1/sessions/get/responses/200"), "\(checked.stderr)")
    }
}

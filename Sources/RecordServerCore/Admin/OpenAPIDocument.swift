import Hummingbird
import NIOCore

/// `GET /v1/openapi.yaml`: the API's OpenAPI 3.1 document, docs/openapi.yaml as it was when the
/// server was built. Package.swift compiles it in (`Admin/openapi.yaml` is a symlink to the docs
/// copy), so the document a client reads is always the one of the server that answers, and no
/// file has to be installed beside the binary. Behind the token like every route but /health.
enum OpenAPIDocument {
    static let path = "/v1/openapi.yaml"
    /// RFC 9512.
    static let mediaType = "application/yaml"

    static var bytes: [UInt8] { PackageResources.openapi_yaml }

    static func response() -> Response {
        Response(status: .ok, headers: [.contentType: mediaType], body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}

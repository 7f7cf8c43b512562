// swift-tools-version:6.0
import PackageDescription

// Layout: executables are thin `main` wrappers; logic lives in the *Core / Shared /
// MediaEncoding libraries that tests import. One C module per system library, each
// with shim functions for what Swift cannot import (macros, variadic calls).
// Imports are internal unless a file says `public import`: a Core module's public surface is
// what its executable and tests need, and no dependency leaks through it by accident.
let internalImports: [SwiftSetting] = [.enableUpcomingFeature("InternalImportsByDefault")]

let package = Package(
    name: "multicam-recorder",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "capture-agent", targets: ["CaptureAgent"]),
        .executable(name: "record-server", targets: ["RecordServer"]),
        .executable(name: "recordctl", targets: ["recordctl"]),
        .executable(name: "mux-bench", targets: ["MuxBench"]),
        .executable(name: "ingest-bench", targets: ["IngestBench"]),
        .executable(name: "agent-catchup-bench", targets: ["AgentCatchUpBench"]),
        .library(name: "Shared", targets: ["Shared"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.30.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.0.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.6.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.0.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.5.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.8.0"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.0.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        // The catalog in PostgreSQL (issue 18), for servers that share one.
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.0"),
        // Deque for the muxer's and the agent's queues (already a dependency of swift-nio).
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.1.0"),
    ],
    targets: [
        // System libraries (Debian: libx264-dev, libopus-dev, libv4l-dev, libasound2-dev).
        .target(name: "CX264", linkerSettings: [.linkedLibrary("x264")]),
        .target(name: "COpus", linkerSettings: [.linkedLibrary("opus")]),
        .target(name: "CV4L2", linkerSettings: [.linkedLibrary("v4l2"), .linkedLibrary("v4lconvert")]),
        .target(name: "CALSA", linkerSettings: [.linkedLibrary("asound")]),
        // glibc's mallopt (not exported by Swift's Glibc module).
        .target(name: "CMallocTuning"),

        // Portable core (Sources/Shared): MP4 boxes/muxer/reader and the wire protocol,
        // each its own module; `Shared` re-exports both.
        .target(name: "MP4", dependencies: [.product(name: "DequeModule", package: "swift-collections")], path: "Sources/Shared/MP4"),
        .target(
            name: "WireProtocol",
            dependencies: [.product(name: "NIOCore", package: "swift-nio")],
            path: "Sources/Shared/Protocol"
        ),
        .target(name: "Shared", dependencies: ["MP4", "WireProtocol"], path: "Sources/Shared/Umbrella"),
        // The admin API's JSON contract (docs/admin-api.md): the server encodes it, recordctl decodes it.
        .target(name: "AdminModels", path: "Sources/Shared/AdminModels"),
        // S3-compatible object storage (issue 18): the SigV4 signer, the XML codecs (FoundationXML)
        // and an S3 client over AsyncHTTPClient.
        .target(
            name: "ObjectStorage",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        // The protocol's NIO channel handlers for both ends (not in `Shared`: WireProtocol stays
        // NIOCore-only, the fuzzers build it from its folder).
        .target(
            name: "WireProtocolNIO",
            dependencies: ["WireProtocol", .product(name: "NIOCore", package: "swift-nio")],
            path: "Sources/Shared/ProtocolNIO"
        ),
        // Owning Swift wrappers over libx264 / libopus and synthetic media generators.
        .target(name: "MediaEncoding", dependencies: ["CX264", "COpus"]),

        // Certificates (a small CA for deployments and tests) and TLS configuration for both ends.
        .target(
            name: "RecordingTLS",
            dependencies: [
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        .target(
            name: "CaptureAgentCore",
            dependencies: [
                "Shared", "WireProtocolNIO", "MediaEncoding", "CV4L2", "CALSA", "RecordingTLS",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: internalImports
        ),
        .target(
            name: "RecordServerCore",
            dependencies: [
                "Shared", "AdminModels", "WireProtocolNIO", "RecordingTLS", "CMallocTuning", "ObjectStorage",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Hummingbird", package: "hummingbird"),
                // The admin listener over HTTPS (admin.tls).
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                // Webhooks: posted with AsyncHTTPClient, signed with HMAC-SHA256.
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            // The admin API's OpenAPI document, served at GET /v1/openapi.yaml: a symlink to
            // docs/openapi.yaml, compiled in as bytes (PackageResources.openapi_yaml).
            // The web console's page, script and style (Console/Assets), compiled in the same way.
            resources: [.embedInCode("Admin/openapi.yaml"), .embedInCode("Console/Assets/index.html"),
                        .embedInCode("Console/Assets/sign-in.html"), .embedInCode("Console/Assets/console.js"),
                        .embedInCode("Console/Assets/console.css")],
            swiftSettings: internalImports
        ),
        .target(
            name: "RecordCtlCore",
            dependencies: [
                "Shared", "AdminModels", "MediaEncoding", "RecordingTLS",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: internalImports
        ),

        .executableTarget(name: "CaptureAgent", dependencies: ["CaptureAgentCore"]),
        .executableTarget(name: "RecordServer", dependencies: ["RecordServerCore"]),
        .executableTarget(name: "recordctl", dependencies: ["RecordCtlCore"]),
        .target(name: "BenchSupport", dependencies: ["Shared", "MediaEncoding", "RecordCtlCore"], path: "Benchmarks/BenchSupport"),
        .executableTarget(name: "AgentCatchUpBench", dependencies: ["CaptureAgentCore", "Shared",
                                                                 .product(name: "NIOCore", package: "swift-nio")],
                          path: "Benchmarks/AgentCatchUpBench"),
        .executableTarget(name: "MuxBench", dependencies: ["BenchSupport", "Shared", "MediaEncoding", "RecordCtlCore"], path: "Benchmarks/MuxBench"),
        .executableTarget(
            name: "IngestBench",
            dependencies: [
                "BenchSupport", "Shared", "WireProtocolNIO", "RecordingTLS",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
            ],
            path: "Benchmarks/IngestBench"),

        // Corpus/ holds the session fuzzer's regression inputs, read from the source tree by path.
        .testTarget(name: "MP4Tests", dependencies: ["MP4", "Shared", "TestSupport"], exclude: ["Corpus", "ReaderCorpus"]),
        .testTarget(name: "AdminModelsTests", dependencies: ["AdminModels"]),
        .testTarget(name: "ObjectStorageTests", dependencies: [
            "ObjectStorage", "Shared", "TestSupport",
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "Crypto", package: "swift-crypto"),
        ]),
        .testTarget(name: "ProtocolTests", dependencies: ["WireProtocol", "Shared", "TestSupport", .product(name: "NIOCore", package: "swift-nio")],
                    resources: [.copy("Corpus")]),
        // The handlers in EmbeddedChannels, and the agent's state machine against the server's
        // validator through them, without sockets.
        .testTarget(name: "WireProtocolNIOTests", dependencies: [
            "WireProtocolNIO", "WireProtocol", "CaptureAgentCore", "TestSupport",
            .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOEmbedded", package: "swift-nio"),
        ]),
        .testTarget(name: "MediaEncodingTests", dependencies: ["MediaEncoding", "TestSupport", "Shared"]),
        // Test support shared by test targets: processes and temporary directories, external
        // tools (ffprobe, ffmpeg) as oracles, the built executables (record-server as a process,
        // recordctl), a real record-server and agent settings for it, a TCP proxy that cuts the
        // network, a tmpfs that fills up.
        .target(name: "TestSupport", dependencies: [
            "MediaEncoding", "RecordServerCore", "CaptureAgentCore", "RecordingTLS", "Shared",
            .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"), .product(name: "Logging", package: "swift-log"),
            .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
        ], path: "Tests/TestSupport"),
        .testTarget(name: "MuxerIntegrationTests", dependencies: ["Shared", "MediaEncoding", "RecordCtlCore", "TestSupport"]),
        // Judges what scripts/hardware-test.sh recorded from real kernel drivers in a VM.
        .testTarget(name: "HardwareBenchTests", dependencies: ["TestSupport"]),
        .testTarget(
            name: "RecordingTLSTests",
            dependencies: [
                "RecordingTLS", "TestSupport",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"), .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"), .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "RecordServerTests",
            dependencies: [
                "RecordServerCore", "CMallocTuning", "RecordingTLS", "Shared", "AdminModels", "WireProtocolNIO", "MediaEncoding", "RecordCtlCore", "TestSupport", "ObjectStorage",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "RecordCtlTests",
            dependencies: [
                "RecordCtlCore", "RecordServerCore", "RecordingTLS", "Shared", "WireProtocolNIO", "TestSupport",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                // HelpTests parses recordctl's commands; AdminClientTests drives its HTTP client.
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ]
        ),
        .testTarget(
            name: "CaptureAgentTests",
            dependencies: [
                "CaptureAgentCore", "RecordingTLS", "Shared", "MediaEncoding", "TestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // The whole system: real capture agents against a real record-server, and recordctl against both, judged by what they recorded.
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "CaptureAgentCore", "RecordServerCore", "RecordingTLS", "Shared", "MediaEncoding", "TestSupport", "ObjectStorage",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)


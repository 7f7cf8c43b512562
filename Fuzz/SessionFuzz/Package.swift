// swift-tools-version:6.0
// libFuzzer target for the session path: validator + MP4 muxer + recovery and reader
// (docs/protocol.md §11 "Fuzzing"; issue 14, "bounds everywhere a number arrives").
//
// Kept outside the root package, like Fuzz/ProtocolFuzz, so that the project's own
// `swift build` / `swift test` never compile with -sanitize=fuzzer. `Sources/MP4` and
// `Sources/WireProtocol` are symlinks to the real modules (Sources/Shared/MP4 and
// Sources/Shared/Protocol), `Sources/CFuzzerDriver` to ProtocolFuzz's driver declaration.
// `Sources/SessionScript` (the input decoder and the drive) is also compiled into MP4Tests
// through a symlink, which replays Tests/MP4Tests/Corpus on every test run.
// Build and run with scripts/fuzz-session.sh.
import PackageDescription

let package = Package(
    name: "SessionFuzz",
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.1.0"),
    ],
    targets: [
        .target(name: "MP4", dependencies: [.product(name: "DequeModule", package: "swift-collections")]),
        .target(
            name: "WireProtocol",
            dependencies: [.product(name: "NIOCore", package: "swift-nio")]
        ),
        .target(name: "SessionScript", dependencies: ["MP4"]),
        .target(name: "CFuzzerDriver"),
        // The file side (issue 13): any bytes as an MP4 file, read, recovered and resumed.
        .executableTarget(name: "ReaderFuzz", dependencies: ["MP4", "SessionScript", "CFuzzerDriver"]),
        .executableTarget(
            name: "SessionFuzz",
            dependencies: [
                "MP4",
                "WireProtocol",
                "SessionScript",
                "CFuzzerDriver",
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

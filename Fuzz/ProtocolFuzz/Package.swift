// swift-tools-version:6.0
// libFuzzer target for the wire protocol parser (docs/protocol.md §11 "Fuzzing").
//
// Kept outside the root package so that the project's own `swift build` / `swift test`
// never compile with -sanitize=fuzzer. `Sources/WireProtocol` is a symlink to the
// real module (Sources/Shared/Protocol), so the fuzzer builds exactly the shipped
// sources and nothing else of the project (a broken sibling module cannot stop it).
// Build and run with scripts/fuzz-protocol.sh.
import PackageDescription

let package = Package(
    name: "ProtocolFuzz",
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.80.0"),
    ],
    targets: [
        .target(
            name: "WireProtocol",
            dependencies: [.product(name: "NIOCore", package: "swift-nio")]
        ),
        // Declares libFuzzer's LLVMFuzzerRunDriver for Swift.
        .target(name: "CFuzzerDriver"),
        .executableTarget(
            name: "ProtocolFuzz",
            dependencies: [
                "WireProtocol",
                "CFuzzerDriver",
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

import TestSupport

/// The capture-agent executable (built by `swift build --build-tests`); nil when not built.
let captureAgentBinary = BuiltProducts.path("capture-agent")

/// The record-server executable (built by `swift build --build-tests`); nil when not built.
let recordServerBinary = BuiltProducts.path("record-server")

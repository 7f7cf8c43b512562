import NIOPosix
import RecordServerCore

/// Runs `recording` (agents recording into the in-process server `running`), then stops the
/// server and shuts down the agents' event loops `group` whether or not it failed, and then
/// throws what it threw: nothing outlives the test, and the error is the one that says what failed.
func recordThenStop(_ running: RecordServer.RunningServer, _ group: MultiThreadedEventLoopGroup,
                    _ recording: () async throws -> Void) async throws {
    do {
        try await recording()
    } catch {
        await running.stop()
        // Clean-up on the way out: the recording's error is the one that says what failed.
        try? await group.shutdownGracefully()
        throw error
    }
    await running.stop()
    try await group.shutdownGracefully()
}

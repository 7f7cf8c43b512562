/// Tests that load both cores for a minute or more on their own — schemathesis against a server,
/// chromium playing a session — take turns: run side by side (Swift Testing runs suites in
/// parallel) they slowed every in-process server of the run past its clients' timeouts
/// (seen: a 10 s request timeout in schemathesis, a recordctl delete with no answer).
public enum HeavyTests {
    private static let turns = Turns()

    /// Runs `body` when no other heavy test is running.
    public static func exclusively<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        await turns.acquire()
        do {
            let result = try await body()
            await turns.release()
            return result
        } catch {
            await turns.release()
            throw error
        }
    }

    /// One at a time, first come first served.
    private actor Turns {
        private var busy = false
        private var waiting: [CheckedContinuation<Void, Never>] = []

        func acquire() async {
            guard busy else {
                busy = true
                return
            }
            await withCheckedContinuation { waiting.append($0) }
        }

        /// Hands the turn to the next waiter, if any (it stays busy), or frees it.
        func release() {
            if waiting.isEmpty { busy = false } else { waiting.removeFirst().resume() }
        }
    }
}

import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// The serial executor of an actor that blocks on storage: the `SessionRegistry` (catalog
/// reads and writes; SQLite may wait up to its 5 s busy timeout). Retention runs on ``pool``
/// as well.
///
/// Its jobs run, one at a time and in order, on a thread of ``pool``, a thread pool kept for
/// blocking work. Without it the registry ran where its callers' tasks ran: on the event loop
/// of the agent connection that called it (`EventLoopTaskExecutor`), so a locked database
/// stalled every other connection on that loop — their reads, their acknowledgements.
///
/// A `RecordingSession` stays on its connection's loop for its samples: a hop per read cycle
/// to a pool thread and back cost 10–18 % more CPU at 64–192 sessions (docs/benchmarks.md,
/// "Storage threads"). What blocks — a fragment's fsync, finalizing, recovery, the session's
/// catalog writes — runs on ``pool`` through ``StorageTaskExecutor``.
final class StorageExecutor: SerialExecutor, @unchecked Sendable {
    /// Blocking is the point of these threads, so there are more of them than cores: an actor
    /// waiting on the disk or a lock leaves the others a thread (issue 16).
    static let pool: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: max(4, 2 * System.coreCount))
        pool.start()
        return pool
    }()

    /// How many jobs one turn on a pool thread runs before it gives the thread back, so that
    /// a busy actor cannot keep a thread from the work queued behind it.
    static let jobsPerTurn = 64

    private struct State {
        var jobs = CircularBuffer<UnownedJob>()
        /// A turn is queued on the pool or running: new jobs wait for it.
        var scheduled = false
    }

    private let state = NIOLockedValueBox(State())
    private let pool: NIOThreadPool

    init(pool: NIOThreadPool = StorageExecutor.pool) {
        self.pool = pool
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let schedule = state.withLockedValue { state in
            state.jobs.append(job)
            guard !state.scheduled else { return false }
            state.scheduled = true
            return true
        }
        if schedule { scheduleTurn() }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    private func scheduleTurn() {
        pool.submit { _ in
            // A pool that is stopped still runs the item (state .cancelled): the jobs must run
            // regardless, or the tasks waiting on them would never resume.
            self.runTurn()
        }
    }

    private func runTurn() {
        for _ in 0..<Self.jobsPerTurn {
            let next = state.withLockedValue { state -> UnownedJob? in
                guard let job = state.jobs.popFirst() else {
                    state.scheduled = false
                    return nil
                }
                return job
            }
            guard let next else { return }
            next.runSynchronously(on: asUnownedSerialExecutor())
        }
        // Jobs are left: queue another turn behind whatever else waits for a thread.
        let more = state.withLockedValue { state in
            if state.jobs.isEmpty { state.scheduled = false }
            return state.scheduled
        }
        if more { scheduleTurn() }
    }
}

/// A task executor preference for a connection's blocking work (`withTaskExecutorPreference`).
///
/// A `RecordingSession` is a default actor: it runs on the executor its caller's task prefers,
/// which for an agent connection is the channel's event loop (``EventLoopTaskExecutor``). The
/// connection asks for this one around what may block on the disk or the database — the
/// fsync of a written fragment (``RecordingSession/syncWritten()``), opening, resuming,
/// finishing a session — so that the session's turn runs on a thread of
/// ``StorageExecutor/pool`` and the loop goes on reading the other agents' sockets. That is
/// one hop there and back per fragment (a second of media) or control message, not per read.
final class StorageTaskExecutor: TaskExecutor, @unchecked Sendable {
    static let shared = StorageTaskExecutor()

    private let pool: NIOThreadPool

    init(pool: NIOThreadPool = StorageExecutor.pool) {
        self.pool = pool
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        pool.submit { _ in
            // A stopped pool still runs the item (state .cancelled): the job must run, or its
            // task would never resume.
            job.runSynchronously(on: self.asUnownedTaskExecutor())
        }
    }
}

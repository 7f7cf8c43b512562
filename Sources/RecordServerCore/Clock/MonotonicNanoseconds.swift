#if canImport(Glibc)
import Glibc
#endif

/// CLOCK_MONOTONIC in nanoseconds: the clock agents stamp samples and heartbeats with
/// (protocol.md §4.1), so the server's side of a clock exchange uses the same kind.
func monotonicNanoseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}

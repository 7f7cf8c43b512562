#!/usr/bin/env bash
# Builds and runs the libFuzzer target for the session path: SessionValidator, the MP4
# muxer, recovery and the reader, driven with extreme timestamps (issue 14).
# See docs/protocol.md §11 "Fuzzing".
#
# Usage: scripts/fuzz-session.sh [RUNS] [extra libFuzzer flags...]
#   RUNS                 executions to perform (default 10000000)
#   FUZZ_SANITIZERS      -sanitize= value (default fuzzer,address; "fuzzer" alone is ~2x faster)
#   FUZZ_JOBS            >1 runs that many independent libFuzzer processes (-jobs/-workers), each
#                        doing RUNS/FUZZ_JOBS executions over the shared corpus; their output goes
#                        to .build-fuzz-session/fuzz-<n>.log
#   FUZZ_MAX_LEN         largest generated input in bytes (default 1024)
#
# Each run writes its recording into /dev/shm/session-fuzz-<pid> (tmpfs; /tmp without it),
# emptied after every input. The working corpus grows in .build-fuzz-session/corpus
# (git-ignored) and is seeded from Tests/MP4Tests/Corpus. A failing input is written to
# fuzz-artifacts/crash-*; fix the bug and copy the input into Tests/MP4Tests/Corpus/ as
# regression-<what>.bin, so that SessionCorpusTests replays it on every test run.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-10000000}
shift || true
sanitizers=${FUZZ_SANITIZERS:-fuzzer,address}
jobs=${FUZZ_JOBS:-1}
max_len=${FUZZ_MAX_LEN:-1024}
scratch="$root/.build-fuzz-session"

(cd "$root/Fuzz/SessionFuzz" &&
    swift build -c release --scratch-path "$scratch" -Xswiftc "-sanitize=$sanitizers")

mkdir -p "$scratch/corpus" "$root/fuzz-artifacts"
args=(
    -runs="$runs"
    -max_len="$max_len"
    -timeout=10
    -rss_limit_mb=2048
    -malloc_limit_mb=512
    -print_final_stats=1
    -artifact_prefix="$root/fuzz-artifacts/"
)
if [ "$jobs" -gt 1 ]; then
    # Independent processes rather than -fork: a fork job re-runs its share of the corpus every
    # few seconds, which costs more than it finds when each input writes and reads files.
    args=(-runs=$((runs / jobs)) "${args[@]:1}" -jobs="$jobs" -workers="$jobs")
fi
# Swift's own crash handler would take the signal before libFuzzer's, which then writes no crash-* file.
export SWIFT_BACKTRACE=enable=no
status=0
(cd "$scratch" && "$scratch/release/SessionFuzz" "${args[@]}" "$@" "$scratch/corpus" "$root/Tests/MP4Tests/Corpus") || status=$?
rm -rf /dev/shm/session-fuzz-* /tmp/session-fuzz-* 2>/dev/null || true
exit "$status"

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

source "$(dirname "$0")/lib/fuzz.sh"
fuzz_setup SessionFuzz .build-fuzz-session 1024 "${1:-}"
shift || true
fuzz_file_target_args
# Swift's own crash handler would take the signal before libFuzzer's, which then writes no crash-* file.
export SWIFT_BACKTRACE=enable=no
status=0
(cd "$scratch" && "$scratch/release/SessionFuzz" "${args[@]}" "$@" "$scratch/corpus" "$root/Tests/MP4Tests/Corpus") || status=$?
rm -rf /dev/shm/session-fuzz-* /tmp/session-fuzz-* 2>/dev/null || true
exit "$status"

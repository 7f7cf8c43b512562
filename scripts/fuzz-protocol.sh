#!/usr/bin/env bash
# Builds and runs the libFuzzer target for the wire protocol parser.
# See docs/protocol.md §11 "Fuzzing".
#
# Usage: scripts/fuzz-protocol.sh [RUNS] [extra libFuzzer flags...]
#   RUNS                 executions to perform (default 10000000)
#   FUZZ_SANITIZERS      -sanitize= value (default fuzzer,address; "fuzzer" alone is ~2x faster)
#   FUZZ_JOBS            >1 runs that many libFuzzer worker processes (-fork), sharing RUNS
#   FUZZ_MAX_LEN         largest generated input in bytes (default 2048)
#
# The working corpus grows in .build-fuzz/corpus (git-ignored) and is seeded from
# Tests/ProtocolTests/Corpus. A failing input is written to fuzz-artifacts/crash-*;
# copy it into Tests/ProtocolTests/Corpus/ (e.g. as regression-<what>.bin) so that
# CorpusTests replays it on every test run.
set -euo pipefail

source "$(dirname "$0")/lib/fuzz.sh"
fuzz_setup ProtocolFuzz .build-fuzz 2048 "${1:-}"
shift || true
if [ "$jobs" -gt 1 ]; then
    args+=(-fork="$jobs" -ignore_crashes=0)
fi
exec "$scratch/release/ProtocolFuzz" "${args[@]}" "$@" "$scratch/corpus" "$root/Tests/ProtocolTests/Corpus"

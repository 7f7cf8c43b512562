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

root=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-10000000}
shift || true
sanitizers=${FUZZ_SANITIZERS:-fuzzer,address}
jobs=${FUZZ_JOBS:-1}
max_len=${FUZZ_MAX_LEN:-2048}
scratch="$root/.build-fuzz"

(cd "$root/Fuzz/ProtocolFuzz" &&
    swift build -c release --scratch-path "$scratch" -Xswiftc "-sanitize=$sanitizers")

mkdir -p "$scratch/corpus" "$root/fuzz-artifacts"
args=(
    -runs="$runs"
    -max_len="$max_len"
    -rss_limit_mb=2048
    -print_final_stats=1
    -artifact_prefix="$root/fuzz-artifacts/"
)
if [ "$jobs" -gt 1 ]; then
    args+=(-fork="$jobs" -ignore_crashes=0)
fi
exec "$scratch/release/ProtocolFuzz" "${args[@]}" "$@" "$scratch/corpus" "$root/Tests/ProtocolTests/Corpus"

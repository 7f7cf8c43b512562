#!/usr/bin/env bash
# Muxer benchmark: builds mux-bench in release mode (own scratch dir, so it does not disturb the
# debug build) and runs it; every argument is passed through (see `--help`). Results go to
# stdout (`--markdown` for docs/benchmarks.md), progress to stderr.
#   scripts/bench-mux.sh                      # 2-minute 2×720p30 + Opus, 5 runs each
#   scripts/bench-mux.sh --markdown --repeat 7
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bootstrap.sh

scratch=.build-bench
swift build -c release --scratch-path "$scratch" --product mux-bench >&2
MUX_BENCH_SWIFT_VERSION="$(swift --version 2>/dev/null | head -n1)" \
  exec "$scratch/release/mux-bench" --cache-dir "$scratch/mux-bench-cache" "$@"

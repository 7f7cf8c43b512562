#!/usr/bin/env bash
# Load benchmark (issue 7): builds record-server and ingest-bench in release mode (own scratch
# dir, so the debug build is left alone) and runs ingest-bench against the release server.
# Every argument is passed through (see `--help`). Tables go to stdout (`--markdown` for
# docs/benchmarks.md), progress to stderr.
#   scripts/bench-ingest.sh                                  # realtime sweep N=1..448 with ffmpeg side by side
#   scripts/bench-ingest.sh --pace max --sessions 1,4,16     # throughput ceiling
#   scripts/bench-ingest.sh --soak-minutes 10 --no-ffmpeg    # memory over a 10-minute soak
#   scripts/bench-ingest.sh --catch-up --sessions 1,64,256   # catch-up after a 60 s outage (issue 14)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bootstrap.sh

scratch=.build-bench
swift build -c release --scratch-path "$scratch" --product record-server >&2
swift build -c release --scratch-path "$scratch" --product ingest-bench >&2
BENCH_SWIFT_VERSION="$(swift --version 2>/dev/null | head -n1)" \
  exec "$scratch/release/ingest-bench" --server-binary "$scratch/release/record-server" \
  --cache-dir "$scratch/ingest-bench-cache" "$@"

#!/usr/bin/env bash
# A long schemathesis run against a real record-server (the test command's
# APIFuzzTests with many more examples and a random seed): every operation of
# docs/openapi.yaml but GET /v1/events, against a server with a live and two finished
# sessions. Prints schemathesis's summary and the run's figures (docs/benchmarks.md).
#   ./scripts/api-fuzz.sh [--examples N] [--seed N]      (defaults: 1000, random)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bootstrap.sh

examples=1000
seed=$RANDOM$RANDOM
while (($#)); do
  case "$1" in
    --examples) examples="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    *) echo "usage: $0 [--examples N] [--seed N]" >&2; exit 2 ;;
  esac
done

swift build --build-tests
log=.build/api-fuzz.log
started=$(date +%s)
status=0
API_FUZZ_EXAMPLES=$examples API_FUZZ_SEED=$seed API_FUZZ_LOG=$log \
  swift test --skip-build --filter APIFuzzTests 2>&1 | tail -n 5 || status=$?
# schemathesis's own summary: operations, test cases, checks and any failure.
[ -f "$log" ] && sed -n '/^=* SUMMARY =*$/,$p' "$log"
echo "api-fuzz: $examples examples per operation and phase, seed $seed, $(( $(date +%s) - started )) s (full output: $log)"
exit "$status"

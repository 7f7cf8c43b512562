#!/usr/bin/env bash
# The whole test suite: unit, protocol, encoder, muxer, server, agent and end-to-end tests.
# Every MP4 the tests write is checked with ffprobe and ffmpeg.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bootstrap.sh

swift build --build-tests
log=.build/test-output.log
status=0
swift test --skip-build 2>&1 | tee "$log" || status=$?

# One plain closing line with the Swift Testing totals (XCTest prints its own "Executed 0 tests"
# because every test here uses Swift Testing).
summary=$(grep -E "Test run with [0-9]+ tests? in [0-9]+ suites? (passed|failed)" "$log" | tail -n 1 || true)
total=$(sed -E 's/.*Test run with ([0-9]+) tests?.*/\1/' <<<"$summary")
failed=$(grep -cE "^✘ Test .* failed after" "$log" || true)
if [ -n "$summary" ]; then
  echo "tests: $((total - failed)) passed, $failed failed"
fi
exit "$status"

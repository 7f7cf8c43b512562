#!/usr/bin/env bash
# The main job: build, then record a synthetic demo session (front + back test cameras and a
# test microphone, encoded with x264 and Opus) into one MP4 and show what was written.
# Extra arguments go to `recordctl demo` (try --help).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bootstrap.sh

echo "building recordctl (the first build fetches and compiles dependencies: a few minutes)…" >&2
swift build --product recordctl >&2
exec .build/debug/recordctl demo "$@"

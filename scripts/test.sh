#!/usr/bin/env bash
# The whole test suite: unit, protocol, encoder and muxer integration tests. Every MP4 the
# tests write is checked with ffprobe and ffmpeg.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bootstrap.sh

swift build --build-tests
swift test --skip-build 2>&1 | tee .build/test-output.log

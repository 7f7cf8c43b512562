#!/usr/bin/env bash
# Builds and runs the libFuzzer target for the file side (issue 13): any bytes as an MP4 file,
# read by MP4Inspection, finalized by MP4Recovery and continued by MP4Muxer.resume, on memory
# files. See docs/protocol.md §11.2.
#
# Usage: scripts/fuzz-reader.sh [RUNS] [extra libFuzzer flags...]
#   RUNS, FUZZ_SANITIZERS, FUZZ_JOBS, FUZZ_MAX_LEN as for scripts/fuzz-session.sh
#   (default largest input: 65536 bytes).
#
# The working corpus grows in .build-fuzz-session/reader-corpus (git-ignored), seeded with
# recordings as the muxer leaves them (finished in place, faststart, unfinished). A failing
# input is written to fuzz-artifacts/crash-*; fix the bug and copy the input into
# Tests/MP4Tests/ReaderCorpus/ as regression-<what>.mp4, so that ReaderCorpusTests replays it.
set -euo pipefail

source "$(dirname "$0")/lib/fuzz.sh"
fuzz_setup SessionFuzz .build-fuzz-session 65536 "${1:-}"
shift || true
fuzz_file_target_args
corpus="$scratch/reader-corpus"
mkdir -p "$corpus"
export SWIFT_BACKTRACE=enable=no
export READER_FUZZ_SEEDS="$corpus"
(cd "$scratch" && "$scratch/release/ReaderFuzz" "${args[@]}" "$@" "$corpus" "$root/Tests/MP4Tests/ReaderCorpus")

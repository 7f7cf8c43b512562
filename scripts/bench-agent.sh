#!/usr/bin/env bash
# capture-agent benchmark (not a test): CPU and memory of capture-agent encoding two 720p30 y4m
# sources + one WAV and streaming them over TLS to a local record-server, side by side with one
# ffmpeg process encoding the same bytes with the same x264/Opus settings. Results go to stdout
# (`--markdown` for docs/benchmarks.md), progress to stderr. See docs/benchmarks.md, "capture-agent".
#   scripts/bench-agent.sh                          # 20 s of content, 5 timed runs each
#   scripts/bench-agent.sh --markdown --repeat 7 --seconds 30
# Options (passed to Benchmarks/agent/bench.py): --seconds N (20), --repeat N (5), --size WxH
# (1280x720), --fps N (30), --fsync fragment|none (record-server's policy; fragment),
# --workdir DIR (/tmp/agent-bench), --perf FILE (one extra agent run under perf record -g),
# --markdown, --keep (keep the recordings).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bootstrap.sh
command -v python3 >/dev/null || { echo "bench-agent: python3 is required" >&2; exit 1; }

scratch=.build-bench
swift build -c release --scratch-path "$scratch" --product capture-agent >&2
swift build -c release --scratch-path "$scratch" --product record-server >&2

# Content generator: the project's own TestPatternVideo/TestToneAudio compiled into a small tool.
gen="$scratch/agent-bench/gen-content"
gen_sources=(Sources/MediaEncoding/TestPatternVideo.swift Sources/MediaEncoding/BitmapFont.swift
             Sources/MediaEncoding/I420Frame.swift Sources/MediaEncoding/TestToneAudio.swift
             Benchmarks/agent/GenerateContent/main.swift)
if [ ! -x "$gen" ] || [ -n "$(find "${gen_sources[@]}" -newer "$gen" 2>/dev/null)" ]; then
  mkdir -p "$(dirname "$gen")"
  swiftc -O -module-name GenerateContent "${gen_sources[@]}" -o "$gen" >&2
fi

workdir=/tmp/agent-bench
args=()
while (($#)); do
  case "$1" in
    --workdir) workdir="$2"; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done

exec python3 Benchmarks/agent/bench.py --agent "$scratch/release/capture-agent" \
  --server "$scratch/release/record-server" --gen "$gen" --workdir "$workdir" "${args[@]}"

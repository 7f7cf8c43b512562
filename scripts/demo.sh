#!/usr/bin/env bash
# The main job: build, then record a real session on this machine. A throwaway CA, a
# record-server on loopback (TLS 1.3, mutual TLS) and a capture-agent with front and back test
# cameras and a test microphone; records ~10 s, stops, and shows the recording as
# `recordctl inspect` and ffprobe see it.
#   ./scripts/demo.sh [--seconds N] [--keep]        (--offline: muxer only, no network)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bootstrap.sh

seconds=10
keep=0
offline=0
while (($#)); do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    --offline) offline=1; shift ;;
    *) echo "usage: $0 [--seconds N] [--keep] [--offline]" >&2; exit 2 ;;
  esac
done

echo "building (the first build fetches and compiles dependencies: several minutes)…" >&2
swift build >&2
bin=.build/debug

if ((offline)); then
  exec "$bin/recordctl" demo --seconds "$seconds"
fi

work=$(mktemp -d /tmp/recording-demo.XXXXXX)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then kill -TERM "$server_pid"; wait "$server_pid" || true; fi
  if ((keep == 0)); then rm -rf "$work"; fi
}
trap cleanup EXIT

echo "== certificates (recordctl ca) in $work" >&2
"$bin/recordctl" ca init --ca-dir "$work/ca" >&2
"$bin/recordctl" ca issue server --ca-dir "$work/ca" --host localhost --ip 127.0.0.1 --out "$work/server" >&2
"$bin/recordctl" ca issue agent demo-agent --ca-dir "$work/ca" --out "$work/demo-agent" >&2
(umask 077; od -An -tx1 -N24 /dev/urandom | tr -d ' \n' > "$work/admin-token")

echo "== record-server" >&2
"$bin/record-server" --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 --data-dir "$work/data" \
  --ca "$work/ca/ca.pem" --cert "$work/server.pem" --key "$work/server-key.pem" \
  --admin-token-file "$work/admin-token" > "$work/server.log" 2>&1 &
server_pid=$!
port=""
for _ in $(seq 1 300); do
  port=$(grep -o 'address=127.0.0.1:[0-9]*' "$work/server.log" | head -n 1 | cut -d: -f2 || true)
  [ -n "$port" ] && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; echo "record-server exited" >&2; exit 1; }
  sleep 0.1
done
[ -n "$port" ] || { cat "$work/server.log" >&2; echo "record-server did not start" >&2; exit 1; }
echo "   listening on 127.0.0.1:$port (TLS 1.3, client certificates required)" >&2

echo "== capture-agent: front + back test cameras (640x360@30), test microphone, ${seconds} s" >&2
"$bin/capture-agent" run --server "127.0.0.1:$port" --ca "$work/ca/ca.pem" \
  --cert "$work/demo-agent.pem" --key "$work/demo-agent-key.pem" --agent-id demo-agent \
  --source front=test:640x360@30 --source back=test:640x360@30 --source mic=test:audio \
  --record --session-id demo --duration "$seconds" --log-level notice >&2

kill -TERM "$server_pid"; wait "$server_pid" || true; server_pid=""
file=$(find "$work/data/recordings" -name '*.mp4' | sort | head -n 1)
[ -n "$file" ] || { cat "$work/server.log" >&2; echo "no recording was written" >&2; exit 1; }

echo
echo "Recording: $file"
echo
"$bin/recordctl" inspect "$file"
echo
echo "ffprobe's view:"
ffprobe -v error -show_entries stream=index,codec_name,width,height,nb_frames,start_time,duration:stream_tags=handler_name \
  -of compact=p=0 "$file" | sed 's/^/  /'
if ((keep)); then echo; echo "kept: $work (server log: $work/server.log)"; fi

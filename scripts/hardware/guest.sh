#!/usr/bin/env bash
# Runs INSIDE the bench's guest (scripts/hardware/vm.sh): one scenario of the hardware bench.
# record-server and capture-agent (the host's binaries, from $BIN) record from the guest
# kernel's virtual devices; the results go to $BENCH_SHARE/<scenario>/ for the host-side
# checks (Tests/HardwareBenchTests):
#   recording.mp4  the finished recording      agent.log, server.log  both logs
#   agent.status   capture-agent's exit status  facts.env            what the scenario did
#
# usage (guest): guest.sh camera-yuyv | camera-disconnect | microphones | drift | mjpeg | multihost-clock | multihost-session
set -uo pipefail

scenario=$1
out=$BENCH_SHARE/$scenario
pki=$BENCH_SHARE/pki
data=/tmp/bench-data        # the guest's own tmpfs: SQLite does not work on 9p
mkdir -p "$out" "$data"
uptime_s() { cut -d' ' -f1 /proc/uptime; }
fact() { echo "$1=$2" >> "$out/facts.env"; }
: > "$out/facts.env"
fact accelerator "${BENCH_ACCELERATOR:-unknown}"

server_pid=""
start_server() {  # [LISTEN [CERTIFICATE-NAME]]
  "$BIN/record-server" --listen "${1:-127.0.0.1:7443}" --admin-listen 127.0.0.1:7444 --data-dir "$data" \
    --ca "$pki/ca/ca.pem" --cert "$pki/${2:-server}.pem" --key "$pki/${2:-server}-key.pem" \
    --admin-token-file "$pki/admin-token" > "$out/server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 300); do
    (echo > /dev/tcp/127.0.0.1/7443) 2>/dev/null && return 0
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "guest: record-server did not start" >&2; cat "$out/server.log" >&2; return 1
}

# record SECONDS SOURCE… — one capture-agent session; its exit status goes to agent.status.
record() {
  local seconds=$1; shift
  local sources=()
  for s in "$@"; do sources+=(--source "$s"); done
  fact recording_seconds "$seconds"
  fact opus_complexity "${OPUS_COMPLEXITY:-10}"
  fact agent_started "$(uptime_s)"
  # What the guest's CPUs do half-way through (TCG is slow: this shows who takes the time).
  ( sleep $((seconds / 2 + 2)); top -b -n 1 -w 200 | head -n 20 > "$out/top.txt" ) &
  # Time to finish after the duration: the agent waits up to --stop-timeout for the server to
  # confirm the session; under TCG a server that fell behind (it was silent for 30 s in one CI
  # run, with thousands of samples to catch up) needs longer than the 30 s default.
  timeout -s INT $((seconds + 150)) "$BIN/capture-agent" run --server 127.0.0.1:7443 --stop-timeout 90 \
    --ca "$pki/ca/ca.pem" --cert "$pki/bench-agent.pem" --key "$pki/bench-agent-key.pem" \
    --agent-id bench-agent --session-id "$scenario" --record --duration "$seconds" \
    --preset ultrafast --opus-complexity "${OPUS_COMPLEXITY:-10}" --log-level info "${sources[@]}" > "$out/agent.log" 2>&1
  echo $? > "$out/agent.status"
  fact agent_ended "$(uptime_s)"
}

finish() {
  kill -TERM "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null
  local file
  file=$(find "$data/recordings" -name '*.mp4' | sort | head -n 1)
  if [ -n "$file" ]; then cp "$file" "$out/recording.mp4"; else echo "guest: no recording was written" >&2; fi
  dmesg | tail -n 40 > "$out/dmesg.log"
}

# play SUBDEVICE WAV — plays into the loopback's playback side, captured on hw:Loopback,1,SUBDEVICE.
play() { aplay -q -D "hw:Loopback,0,$1" "$2" & }

# The loopback's capture side runs at 48000 × 100000 / VALUE frames a second (its control on
# device 1; measured in the guest: 110000 gave 43636 Hz, device 0's control changed nothing).
set_capture_rate_ppm() {  # SUBDEVICE PPM (positive = the device runs fast)
  local value=$(( (100000 * 1000000 + (1000000 + $2) / 2) / (1000000 + $2) ))
  amixer -q -c Loopback cset "iface=PCM,name=PCM Rate Shift 100000,device=1,subdevice=$1" "$value"
  fact "rate_shift_$1" "$value"
}

case "$scenario" in
  camera-yuyv)
    # vivid's native YUYV, converted to I420 by libv4lconvert inside capture-agent.
    start_server || exit 1
    record 8 'front=v4l2:/dev/video0?size=640x360&fps=30&format=YUYV'
    ;;
  camera-disconnect)
    # YU12 straight from the driver, plus snd-dummy's microphone; the camera is unplugged
    # (vivid's disconnect control) half-way, the microphone goes on. Half-way is 5 s after the
    # camera was opened (the recording's timeline starts there), and never before the session
    # was accepted: under TCG on a busy host the agent took 3 s to connect once, and a camera
    # unplugged before its first frame was encoded leaves no track to judge. Timing from the
    # acceptance alone put the unplug 10.7 s into a 12 s recording in one slow CI run.
    start_server || exit 1
    ( polls=0 opened=""
      while [ "$polls" -lt 600 ]; do
        [ -z "$opened" ] && grep -q "front: device granted" "$out/agent.log" 2>/dev/null && opened=$(uptime_s)
        if [ -n "$opened" ] && grep -q "session $scenario accepted" "$out/agent.log" 2>/dev/null \
          && awk -v a="$opened" -v b="$(uptime_s)" 'BEGIN { exit !(b - a >= 5) }'; then break; fi
        sleep 0.2; polls=$((polls + 1))
      done
      fact camera_opened_at "$opened"; fact disconnect_at "$(uptime_s)"; v4l2-ctl -d /dev/video0 -c disconnect=1 ) & unplug=$!
    record 12 'front=v4l2:/dev/video0?size=640x360&fps=30' 'dummy=alsa:hw:Dummy,0?channels=2'
    wait "$unplug"
    ;;
  microphones)
    # The same signal into three loopback cables; substream 1 plays at 44.1 kHz, which only
    # plughw (resampling to 48 kHz, and to mono here) can capture.
    play 0 "$BENCH_SHARE/signal-48k.wav"
    play 1 "$BENCH_SHARE/signal-44k.wav"
    play 2 "$BENCH_SHARE/signal-48k.wav"
    start_server || exit 1
    # Emulated (TCG) CPUs run libopus about 40 times slower than the host: four encoders at
    # the default complexity 10 would need ~190 % of the guest's two CPUs.
    OPUS_COMPLEXITY=3 record 20 'hw=alsa:hw:Loopback,1,0?channels=2' 'plughw=alsa:plughw:Loopback,1,1?channels=1' \
      'dsnoop=alsa:dsnoop:CARD=Loopback,DEV=1,SUBDEV=2?channels=2' 'dummy=alsa:hw:Dummy,0?channels=2'
    kill $(jobs -p) 2>/dev/null
    ;;
  drift)
    # Loopback clocks shifted against the system clock, recorded beside vivid's camera
    # (320x180: x264 at 640x360 alone takes more than one emulated CPU).
    set_capture_rate_ppm 0 100
    set_capture_rate_ppm 1 -100
    set_capture_rate_ppm 2 1000
    for sub in 0 1 2; do play "$sub" "$BENCH_SHARE/signal-48k-long.wav"; done
    start_server || exit 1
    # Opus complexity 0: this scenario checks timestamps only, and three encoders at 3 left an
    # emulated guest so far behind that its server went silent (CI runs of 28346a8, 6864a80).
    OPUS_COMPLEXITY=0 record "${DRIFT_SECONDS:-65}" 'front=v4l2:/dev/video0?size=320x180&fps=30' \
      'fast=alsa:hw:Loopback,1,0?channels=2' 'slow=alsa:hw:Loopback,1,1?channels=2' 'faster=alsa:hw:Loopback,1,2?channels=2'
    kill $(jobs -p) 2>/dev/null
    ;;
  mjpeg)
    # A USB-style MJPEG webcam: v4l2loopback fed with pre-encoded 1280x720@30 MJPEG.
    modprobe v4l2loopback devices=1 video_nr=10 exclusive_caps=1 card_label=BenchMJPEG max_buffers=8 || exit 1
    ffmpeg -hide_banner -loglevel warning -nostdin -re -stream_loop -1 -i "$BENCH_SHARE/mjpeg-720p30.mkv" \
      -c:v copy -f v4l2 /dev/video10 > "$out/feeder.log" 2>&1 &
    for _ in $(seq 1 100); do v4l2-ctl -d /dev/video10 -D 2>/dev/null | grep -q 'Video Capture' && break; sleep 0.1; done
    v4l2-ctl -d /dev/video10 --list-formats-ext > "$out/formats.txt" 2>&1
    start_server || exit 1
    record 10 'front=v4l2:/dev/video10?size=1280x720&fps=30&format=MJPG'
    kill $(jobs -p) 2>/dev/null
    ;;
  multihost-clock|multihost-session)
    # Three hosts: one network namespace per agent behind a veth on a bridge, netem on both
    # directions (delays changing every 20 s, 10 ms jitter, a fixed asymmetry per agent), each
    # agent's clock offset by hours and drifting (--clock-offset, --clock-drift-ppm). The server
    # runs in the root namespace on 10.0.0.1; multihost_clock.py drives the rest.
    ip link set lo up
    ip link add br0 type bridge && ip addr add 10.0.0.1/24 dev br0 && ip link set br0 up || exit 1
    for k in 1 2 3; do
      ip netns add "h$k" && ip link add "v$k" type veth peer name "e$k" netns "h$k" || exit 1
      ip link set "v$k" master br0 up
      ip -n "h$k" addr add "10.0.0.$((k + 1))/24" dev "e$k"
      ip -n "h$k" link set "e$k" up && ip -n "h$k" link set lo up
    done
    start_server 0.0.0.0:7443 server-multihost || exit 1
    fact recording_seconds "${MULTIHOST_SECONDS:-150}"
    # multihost-session records one session across the three agents (multihost_clock.py "session").
    load="${MULTIHOST_LOAD:-idle}"
    [ "$scenario" = multihost-session ] && load=session
    fact load "$load"
    python3 "$(dirname "$0")/multihost_clock.py" "$out" "$BIN" "$pki" "${MULTIHOST_SECONDS:-150}" "$load" \
      > "$out/driver.log" 2>&1
    echo $? > "$out/agent.status"
    ;;
  *)
    echo "guest: unknown scenario $scenario" >&2; exit 2 ;;
esac
finish
"$BIN/capture-agent" devices > "$out/devices.txt" 2>&1
exit 0

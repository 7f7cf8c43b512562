#!/usr/bin/env bash
# The hardware bench: capture-agent and record-server (this checkout's binaries) recording from
# real Linux kernel drivers — vivid (V4L2 webcam), snd-aloop (loopback sound card), snd-dummy
# and v4l2loopback (an MJPEG webcam) — inside a QEMU guest that boots Debian's own kernel.
# docs/agent.md "Tested hardware paths" says what each scenario covers.
#
# usage: scripts/hardware-test.sh [--out DIR] [--bin DIR] [--skip-install] [SCENARIO…]
#   SCENARIO: camera-yuyv camera-disconnect microphones drift mjpeg multihost-clock multihost-session (default: all)
#   MULTIHOST_SECONDS=600 makes multihost-clock and multihost-session run 10 minutes instead of 150 s (the figures in
#   docs/benchmarks.md); MULTIHOST_LOAD=recording has its agents record meanwhile (default idle)
#   --out DIR   results (default .build/hardware-bench): DIR/<scenario>/recording.mp4, logs
#   --bin DIR   capture-agent/record-server/recordctl to test (default .build/release: what is
#               deployed, and under emulation a debug build's overhead starves the encoders)
# Then `HARDWARE_BENCH_RESULTS=DIR swift test --skip-build --filter HardwareBenchTests` judges
# the results with ffprobe/ffmpeg; scripts/test.sh does both.
# Installs what it needs (apt) the first time: qemu, Debian's kernel, busybox, v4l-utils,
# alsa-utils, and v4l2loopback-dkms with the kernel's headers (built for the guest kernel).
set -euo pipefail
cd "$(dirname "$0")/.."

out=.build/hardware-bench bin=.build/release install=1 scenarios=()
while (($#)); do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --bin) bin="$2"; shift 2 ;;
    --skip-install) install=0; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    -*) echo "hardware-test: unknown option $1" >&2; exit 2 ;;
    *) scenarios+=("$1"); shift ;;
  esac
done
((${#scenarios[@]})) || scenarios=(camera-yuyv camera-disconnect microphones drift mjpeg multihost-clock multihost-session)
bin=$(readlink -f "$bin")
for tool in capture-agent record-server recordctl; do
  [ -x "$bin/$tool" ] || { echo "hardware-test: $bin/$tool is missing (swift build -c release --product $tool)" >&2; exit 2; }
done

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
apt_install() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  echo "hardware-test: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
    "${missing[@]}" > /dev/null
}
mkdir -p "$out"
out=$(readlink -f "$out")
rm -f "$out/UNAVAILABLE"
# Only where QEMU cannot run at all are the bench's tests skipped, with this one-line reason.
unavailable() {
  echo "$1" > "$out/UNAVAILABLE"
  echo "hardware-test: cannot run: $1" >&2
  exit 0
}
if ((install)); then
  apt_install qemu-system-x86 linux-image-amd64 busybox-static kmod cpio v4l-utils alsa-utils file \
    || unavailable "the packages for QEMU and Debian's kernel could not be installed (apt-get failed)"
fi
kernel_version=$(ls /lib/modules 2>/dev/null | sort -V | tail -n 1)
[ -n "$kernel_version" ] && [ -r "/boot/vmlinuz-$kernel_version" ] \
  || unavailable "no readable kernel in /boot and /lib/modules (apt-get install linux-image-amd64)"
command -v qemu-system-x86_64 > /dev/null || unavailable "qemu-system-x86_64 is not installed"
qemu-system-x86_64 -accel help 2>/dev/null | grep -qw tcg || unavailable "this qemu-system-x86_64 offers no TCG accelerator"
if ((install)) && [[ " ${scenarios[*]} " == *" mjpeg "* ]]; then
  # DKMS builds v4l2loopback for the guest's kernel (the one in /lib/modules), not the host's.
  apt_install dkms "linux-headers-$kernel_version" v4l2loopback-dkms
  if ! modinfo -k "$kernel_version" v4l2loopback > /dev/null 2>&1; then
    version=$(dpkg-query -W -f='${Version}' v4l2loopback-dkms | sed 's/-.*//')
    $sudo dkms install "v4l2loopback/$version" -k "$kernel_version" > /dev/null
  fi
fi

chmod 755 "$out"

# Certificates and the admin token, made once per results directory.
if [ ! -s "$out/pki/bench-agent.pem" ]; then
  rm -rf "$out/pki"; mkdir -p "$out/pki"
  "$bin/recordctl" ca init --ca-dir "$out/pki/ca" > /dev/null
  "$bin/recordctl" ca issue server --ca-dir "$out/pki/ca" --host localhost --ip 127.0.0.1 --out "$out/pki/server" > /dev/null
  "$bin/recordctl" ca issue agent bench-agent --ca-dir "$out/pki/ca" --out "$out/pki/bench-agent" > /dev/null
  (umask 077; od -An -tx1 -N24 /dev/urandom | tr -d ' \n' > "$out/pki/admin-token")
fi
# multihost-clock: the server on the namespaces' bridge, and one agent per namespace.
if [ ! -s "$out/pki/clock-h3.pem" ]; then
  "$bin/recordctl" ca issue server --ca-dir "$out/pki/ca" --host localhost --ip 10.0.0.1 --out "$out/pki/server-multihost" > /dev/null
  for k in 1 2 3; do "$bin/recordctl" ca issue agent "clock-h$k" --ca-dir "$out/pki/ca" --out "$out/pki/clock-h$k" > /dev/null; done
fi

# The test signal (docs/agent.md "Tested hardware paths"): left a continuous 1 kHz tone at
# half scale, right a 100 ms 3 kHz beep at the start of every second.
signal() {  # RATE SECONDS FILE
  [ -s "$3" ] || ffmpeg -hide_banner -loglevel error -y -f lavfi \
    -i "aevalsrc=exprs=0.5*sin(2*PI*1000*t)|if(lt(mod(t\,1)\,0.1)\,0.5*sin(2*PI*3000*t)\,0):s=$1:d=$2" \
    -c:a pcm_s16le "$3"
}
signal 48000 40 "$out/signal-48k.wav"
signal 44100 40 "$out/signal-44k.wav"
signal 48000 120 "$out/signal-48k-long.wav"
# An MJPEG clip like a webcam's (4:2:0 JPEG), pre-encoded here: encoding it live in the guest
# would take the CPU the agent needs.
[ -s "$out/mjpeg-720p30.mkv" ] || ffmpeg -hide_banner -loglevel error -y \
  -f lavfi -i testsrc2=size=1280x720:rate=30 -t 10 -c:v mjpeg -pix_fmt yuvj420p -q:v 5 "$out/mjpeg-720p30.mkv"

vivid="vivid:n_devs=1,node_types=0x1,num_inputs=1,input_types=0x0"
status=0
for scenario in "${scenarios[@]}"; do
  case "$scenario" in
    camera-yuyv) modules="$vivid" ;;
    camera-disconnect) modules="$vivid snd-dummy" ;;
    microphones) modules="snd-aloop snd-dummy" ;;
    drift) modules="$vivid snd-aloop" ;;
    mjpeg) modules="" ;;   # the guest script loads v4l2loopback itself
    multihost-clock|multihost-session) modules="veth bridge sch_netem" ;;
    *) echo "hardware-test: unknown scenario $scenario" >&2; exit 2 ;;
  esac
  rm -rf "${out:?}/$scenario"; mkdir -p "$out/$scenario"
  started=$(date +%s)
  set +e
  scripts/hardware/vm.sh --share "$out" --modules "$modules" --timeout $((400 + ${MULTIHOST_SECONDS:-150})) --mem 3072 -- \
    env BIN="$bin" MULTIHOST_SECONDS="${MULTIHOST_SECONDS:-150}" MULTIHOST_LOAD="${MULTIHOST_LOAD:-idle}" bash "$PWD/scripts/hardware/guest.sh" "$scenario" > "$out/$scenario/console.log" 2>&1
  result=$?
  set -e
  agent=$(cat "$out/$scenario/agent.status" 2>/dev/null || echo "none")
  echo "hardware-test: $scenario: guest exit $result, capture-agent exit $agent, $(( $(date +%s) - started )) s" >&2
  if [ "$result" != 0 ]; then
    status=1
    tail -n 20 "$out/$scenario/console.log" | sed 's/^/    /' >&2
  fi
done
echo "hardware-test: results in $out" >&2
exit "$status"
